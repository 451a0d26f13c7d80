"""Mark each gitleaks case that is written literally in its rule files."""
import json, os, re, sys, glob

def literals(src):
    out = []  # list of (start_index, end_index, value)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == '/' and src.startswith('//', i):
            j = src.find('\n', i); i = n if j < 0 else j; continue
        if c == '/' and src.startswith('/*', i):
            j = src.find('*/', i); i = n if j < 0 else j + 2; continue
        if c == '`':
            j = src.find('`', i + 1)
            out.append((i, j + 1, src[i + 1:j].replace('\r', ''))); i = j + 1; continue
        if c == '"':
            j = i + 1; buf = ''
            while src[j] != '"':
                if src[j] == '\\':
                    buf += src[j:j + 2]; j += 2
                else:
                    buf += src[j]; j += 1
            try:
                val = json.loads('"' + buf.replace("\\'", "'") + '"') if '\\x' not in buf else bytes(buf, 'utf-8').decode('unicode_escape')
            except Exception:
                val = bytes(buf, 'utf-8').decode('unicode_escape')
            out.append((i, j + 1, val)); i = j + 1; continue
        if c == "'":
            j = src.find("'", i + 1)
            if j > 0 and j - i < 6: i = j + 1; continue
        i += 1
    return out

def all_literals(src):
    lits = literals(src)
    vals = set(v for _, _, v in lits)
    # adjacent concatenations: "a" + "b" + ...
    k = 0
    while k < len(lits):
        acc = lits[k][2]; e = lits[k][1]; m = k + 1
        while m < len(lits) and re.fullmatch(r'\s*\+\s*', src[e:lits[m][0]]):
            acc += lits[m][2]; e = lits[m][1]; vals.add(acc); m += 1
        k += 1
    return vals

root = sys.argv[1]
lit = set()
for f in glob.glob(os.path.join(root, '*.go')):
    lit |= all_literals(open(f, encoding='utf-8').read())
cases = [json.loads(l) for l in open(sys.argv[2])]
n = {True: [0, 0], False: [0, 0]}
for c in cases:
    c['lit'] = c['text'] in lit
    n[c['tp']][c['lit']] += 1
print('tp generated/literal', n[True], 'fp generated/literal', n[False], file=sys.stderr)
with open(sys.argv[3], 'w') as o:
    for c in cases:
        o.write(json.dumps(c, sort_keys=True) + '\n')
