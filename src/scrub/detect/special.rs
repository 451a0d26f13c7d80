//! The token shapes with no prefix of their own at their start ([`Special`]):
//! each has its trigger somewhere inside it (the `:AA` of a Telegram bot
//! token, the `|` of a Facebook app id and secret, …) and its own matcher
//! here, which looks around that trigger.

use super::{
    Kind, PRIO_TOKEN, Scanner, Special, classes, discord_host_before, escaped_path_end, is_alnum,
    is_blank, is_filler, is_tok, scan_while,
};

/// Whether a word ends at `k` (no letter or digit there).
fn word_end(b: &[u8], k: usize) -> bool {
    b.get(k).is_none_or(|&c| !is_alnum(c))
}

/// Whether a word starts at `k` (no letter or digit before it).
fn word_start(b: &[u8], k: usize) -> bool {
    k == 0 || !is_alnum(b[k - 1])
}

impl Scanner<'_> {
    /// The token shapes of [`Special`], each at its trigger.
    pub(super) fn special(&mut self, sp: Special, ms: usize, me: usize) {
        match sp {
            Special::Telegram => self.telegram(ms, me),
            Special::AzureOpenai => self.azure_openai(ms),
            Special::FacebookPair => self.facebook_pair(ms),
            Special::OnePassword => self.one_password(ms, me),
            Special::Mailchimp => self.mailchimp(ms, me),
            Special::ClickHouse => self.clickhouse(ms, me),
            Special::DiscordHook => self.discord_hook(ms, me),
            Special::SlackHookEscaped => self.slack_hook_escaped(ms, me),
        }
    }

    /// `123456789:AA…` (35 characters after the colon), alone or in
    /// `api.telegram.org/bot<token>/`; the trigger is the `:AA`.
    fn telegram(&mut self, ms: usize, me: usize) {
        let b = self.b;
        let mut s = ms;
        while s > 0 && ms - s <= 16 && b[s - 1].is_ascii_digit() {
            s -= 1;
        }
        let bot = s >= 3 && b[s - 3..s].eq_ignore_ascii_case(b"bot");
        if ms - s < 5 || ms - s > 16 || !(word_start(b, s) || bot) || &b[ms..me] != b":AA" {
            return;
        }
        let end = scan_while(b, ms + 1, is_tok);
        // 35 characters; a detail cut at its bound, or a token with a
        // character glued on, is still one.
        if (30..=36).contains(&(end - (ms + 1))) && classes(&b[ms + 1..end]) >= 2 {
            self.emit(s, end, Kind::Token, PRIO_TOKEN);
        }
    }

    /// An Azure OpenAI key is 32 hex characters; near the resource's
    /// endpoint (`https://<name>.openai.azure.com`) a word of exactly that
    /// is the key.
    fn azure_openai(&mut self, ms: usize) {
        let b = self.b;
        let lo = ms.saturating_sub(256);
        let hi = b.len().min(ms + 256);
        let mut k = lo;
        while k < hi {
            if !b[k].is_ascii_hexdigit() || (k > 0 && is_tok(b[k - 1])) {
                k += 1;
                continue;
            }
            let e = scan_while(&b[..hi], k, |c| c.is_ascii_hexdigit());
            let run = &b[k..e];
            if e - k == 32
                && !b.get(e).is_some_and(|&c| is_tok(c))
                && classes(run) >= 2
                && !is_blank(run)
            {
                self.emit(k, e, Kind::ApiKey, PRIO_TOKEN);
            }
            k = e.max(k + 1);
        }
    }

    /// `<15–16 digit app id>|<27–40 character app secret>` (Facebook): the
    /// secret after the app id; the trigger is the `|`.
    fn facebook_pair(&mut self, bar: usize) {
        let b = self.b;
        let mut s = bar;
        while s > 0 && bar - s <= 16 && b[s - 1].is_ascii_digit() {
            s -= 1;
        }
        if !(15..=16).contains(&(bar - s)) || !word_start(b, s) {
            return;
        }
        let end = scan_while(b, bar + 1, is_tok);
        let secret = &b[bar + 1..end];
        if (27..=40).contains(&secret.len())
            && word_end(b, end)
            && classes(secret) >= 2
            && !is_filler(secret)
        {
            self.emit(bar + 1, end, Kind::Secret, PRIO_TOKEN);
        }
    }

    /// `A3-` then groups of upper-case letters and digits: 6-11-5-5-5 or
    /// 6-6-5-5-5-5 (1Password secret keys).
    fn one_password(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if &b[ms..me] != b"A3-" || !word_start(b, ms) {
            return;
        }
        let end = scan_while(b, me, |c| {
            c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'-'
        });
        let mut groups = [0usize; 8];
        let mut n = 0;
        for g in b[me..end].split(|&c| c == b'-') {
            if n == groups.len() {
                return;
            }
            groups[n] = g.len();
            n += 1;
        }
        let shape = &groups[..n];
        if (shape == [6, 11, 5, 5, 5] || shape == [6, 6, 5, 5, 5, 5])
            && word_end(b, end)
            && !is_blank(&b[me..end])
        {
            self.emit(ms, end, Kind::Token, PRIO_TOKEN);
        }
    }

    /// `<32 hex>-us<1–2 digits>` (Mailchimp); the trigger is the `-us`.
    fn mailchimp(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if ms < 32 || &b[ms..me] != b"-us" {
            return;
        }
        let s = ms - 32;
        let e = scan_while(&b[..b.len().min(me + 3)], me, |c| c.is_ascii_digit());
        if b[s..ms].iter().all(u8::is_ascii_hexdigit)
            && word_start(b, s)
            && (1..=2).contains(&(e - me))
            && word_end(b, e)
            && classes(&b[s..ms]) >= 2
        {
            self.emit(s, e, Kind::ApiKey, PRIO_TOKEN);
        }
    }

    /// `4b1d` and 38 alphanumerics (ClickHouse Cloud); a hex hash that
    /// starts with `4b1d` has no upper case.
    fn clickhouse(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if &b[ms..me] != b"4b1d" || !word_start(b, ms) {
            return;
        }
        let end = scan_while(b, me, is_alnum);
        let body = &b[me..end];
        if body.len() == 38
            && body.iter().any(u8::is_ascii_uppercase)
            && body.iter().any(u8::is_ascii_lowercase)
            && !is_blank(body)
        {
            self.emit(ms, end, Kind::Token, PRIO_TOKEN);
        }
    }

    /// `https://discord.com/api/webhooks/<id>/<token>`: the id and the
    /// token (the host and the path's start stay).
    fn discord_hook(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if !discord_host_before(&b[..ms]) {
            return;
        }
        let end = escaped_path_end(b, me);
        if end - me >= 20 && classes(&b[me..end]) >= 2 {
            self.emit(me, end, Kind::Token, PRIO_TOKEN);
        }
    }

    /// `hooks.slack.com\/services\/…` (JSON's escaped slashes): the host
    /// and the secret path; the trigger is `slack.com\/`.
    fn slack_hook_escaped(&mut self, ms: usize, me: usize) {
        const HOOK_KINDS: [&[u8]; 3] = [b"services", b"workflows", b"triggers"];
        let b = self.b;
        let hs = ms.saturating_sub(6);
        if !b[hs..ms].eq_ignore_ascii_case(b"hooks.") {
            return;
        }
        let rest = &b[me..];
        let Some(kind) = HOOK_KINDS
            .iter()
            .find(|k| rest.len() > k.len() + 2 && rest[..k.len()].eq_ignore_ascii_case(k))
        else {
            return;
        };
        let from = me + kind.len();
        if !b[from..].starts_with(b"\\/") {
            return;
        }
        let end = escaped_path_end(b, from + 2);
        if end - (from + 2) >= 20 && classes(&b[from + 2..end]) >= 2 {
            self.emit(hs, end, Kind::SlackToken, PRIO_TOKEN);
        }
    }
}
