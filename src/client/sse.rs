//! A Server-Sent Events parser with bounds: no line longer than
//! [`MAX_SSE_LINE`](super::bounded::MAX_SSE_LINE), no event's data larger
//! than [`MAX_SSE_EVENT`](super::bounded::MAX_SSE_EVENT). It looks at each
//! byte once (a line that never ends costs its bound, not a core), and
//! keeps only the line and the event being read.

use super::bounded::{MAX_SSE_EVENT, MAX_SSE_LINE, size};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub id: String,
    /// The data, or `None` when it was not UTF-8.
    pub data: Option<String>,
}

#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event: String,
    id: String,
    /// The last line ended in `\r`: a `\n` right after it ends nothing.
    after_cr: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feed bytes; complete events are pushed to `out`. An error names the
    /// bound that was passed.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), String> {
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.after_cr && rest[0] == b'\n' {
                rest = &rest[1..];
                self.after_cr = false;
                continue;
            }
            self.after_cr = false;
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(i) => {
                    self.push_line(&rest[..i])?;
                    self.after_cr = rest[i] == b'\r';
                    self.end_line(out)?;
                    rest = &rest[i + 1..];
                }
                None => {
                    self.push_line(rest)?;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    fn push_line(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.line.len() + bytes.len() > MAX_SSE_LINE {
            return Err(format!("an event-stream line over {}", size(MAX_SSE_LINE)));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), String> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if self.has_data || !self.event.is_empty() {
                if self.data.last() == Some(&b'\n') {
                    self.data.pop();
                }
                let data = String::from_utf8(std::mem::take(&mut self.data)).ok();
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    id: self.id.clone(),
                    data,
                });
            }
            self.has_data = false;
            self.data.clear();
            self.event.clear();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_SSE_EVENT {
                    return Err(format!("an event's data over {}", size(MAX_SSE_EVENT)));
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => self.id = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, String> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn events_fields_comments_and_line_ends() {
        let body = b": keep-alive\n\nid: 7\nevent: failover\ndata: {\"a\":\ndata: 1}\n\nid: 8\r\nevent: reset\r\ndata: x\r\n\r\n";
        let want = vec![
            SseEvent {
                event: "failover".into(),
                id: "7".into(),
                data: Some("{\"a\":\n1}".into()),
            },
            SseEvent {
                event: "reset".into(),
                id: "8".into(),
                data: Some("x".into()),
            },
        ];
        assert_eq!(parse(&[body]).expect("whole"), want);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(parse(&bytes).expect("byte by byte"), want);
    }

    #[test]
    fn an_endless_line_or_event_stops_at_its_bound() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let chunk = vec![b'a'; 4096];
        p.feed(b"data: ", &mut out).expect("start");
        let mut err = None;
        for _ in 0..(MAX_SSE_LINE / 4096 + 2) {
            if let Err(e) = p.feed(&chunk, &mut out) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err.as_deref(), Some("an event-stream line over 256 KiB"));
        let mut p = SseParser::new();
        let line = format!("data: {}\n", "b".repeat(1000));
        let mut err = None;
        for _ in 0..(MAX_SSE_EVENT / 1000 + 2) {
            if let Err(e) = p.feed(line.as_bytes(), &mut out) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err.as_deref(), Some("an event's data over 256 KiB"));
        assert!(out.is_empty());
    }
}
