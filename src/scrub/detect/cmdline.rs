//! Passwords given on the command lines of tools other than curl and
//! HTTPie (those are read in `detect`): `sshpass -p P`, `docker login -u
//! ci -p P` (and `podman login`), `mongosh … -p P`, `az login … -p P`,
//! `htpasswd -b FILE USER P`, `smbclient -U user%P`, `ssh-keygen -N P`.
//! The trigger is the command's name as a word; the line runs to a `|`,
//! `;`, `&` or the end of the line, and at most [`LINE`] bytes.

use super::{Kind, Scanner, is_alnum, is_space, scan_while};

/// How far a command line is read.
const LINE: usize = 1024;

/// At most this many words of a command line are read.
const WORDS: usize = 64;

impl Scanner<'_> {
    /// The command at `ms..me` (its trigger word): read its line's words
    /// and take the password its flags give.
    pub(super) fn command_password(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if (ms > 0 && (is_alnum(b[ms - 1]) || matches!(b[ms - 1], b'-' | b'_')))
            || b.get(me).is_some_and(|&c| !is_space(c))
        {
            return;
        }
        let lim = b.len().min(me + LINE);
        let end = scan_while(&b[..lim], me, |c| {
            !matches!(c, b'\n' | b'\r' | b'|' | b';' | b'&')
        });
        let words = self.line_words(me, end);
        let cmd = b[ms..me].to_ascii_lowercase();
        match cmd.as_slice() {
            b"htpasswd" => self.htpasswd(&words),
            b"smbclient" => self.smbclient(&words),
            b"ssh-keygen" => self.flag_password(&words, &[b"-N", b"-P"], true),
            b"sshpass" => self.flag_password(&words, &[b"-p"], true),
            _ => self.flag_password(&words, &[b"-p"], false),
        }
    }

    /// The shell words of `from..end`, at most [`WORDS`] of them.
    fn line_words(&self, from: usize, end: usize) -> Vec<(usize, usize)> {
        let mut words = Vec::new();
        let mut i = from;
        while words.len() < WORDS {
            i = scan_while(&self.b[..end], i, is_space);
            if i >= end {
                break;
            }
            let we = self.shell_word(i, end);
            words.push((i, we));
            i = we.max(i + 1);
        }
        words
    }

    /// The word after one of `flags` (`-p P`), or glued to it (`-pP`)
    /// when `glued` is allowed, is a password.
    fn flag_password(&mut self, words: &[(usize, usize)], flags: &[&[u8]], glued: bool) {
        let b = self.b;
        for (k, &(ws, we)) in words.iter().enumerate() {
            let w = &b[ws..we];
            if flags.contains(&w) {
                if let Some(&(vs, ve)) = words.get(k + 1)
                    && b[vs] != b'-'
                {
                    self.whole_credential(vs, ve, Kind::Password);
                }
            } else if glued && w.len() > 2 && flags.iter().any(|f| w.starts_with(f)) {
                self.whole_credential(ws + 2, we, Kind::Password);
            }
        }
    }

    /// `htpasswd -b[c…] FILE USER PASSWORD`, `htpasswd -nb USER PASSWORD`:
    /// with `-b` the password is the last positional word.
    fn htpasswd(&mut self, words: &[(usize, usize)]) {
        let b = self.b;
        let flags = || {
            words
                .iter()
                .map(|&(ws, we)| &b[ws..we])
                .filter(|w| w.len() > 1 && w[0] == b'-' && w[1] != b'-')
        };
        if !flags().any(|w| w.contains(&b'b')) {
            return;
        }
        let need = if flags().any(|w| w.contains(&b'n')) {
            1
        } else {
            2
        };
        let positional = words.iter().filter(|&&(ws, _)| b[ws] != b'-');
        if let Some(&(vs, ve)) = positional.clone().nth(need) {
            self.whole_credential(vs, ve, Kind::Password);
        }
    }

    /// `smbclient -U user%password` (also `--user=`, glued `-Uuser%pw`):
    /// the part after the `%`.
    fn smbclient(&mut self, words: &[(usize, usize)]) {
        let b = self.b;
        for (k, &(ws, we)) in words.iter().enumerate() {
            let w = &b[ws..we];
            let value = if w == b"-U" || w == b"--user" {
                words.get(k + 1).copied()
            } else if w.starts_with(b"--user=") {
                Some((ws + 7, we))
            } else if w.len() > 2 && w.starts_with(b"-U") {
                Some((ws + 2, we))
            } else {
                None
            };
            if let Some((vs, ve)) = value
                && let Some(p) = b[vs..ve].iter().position(|&c| c == b'%')
            {
                self.whole_credential(vs + p + 1, ve, Kind::Password);
            }
        }
    }
}
