//! The one sanitizer for untrusted text shown on a terminal or in line-oriented output.

use std::borrow::Cow;

fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// Text from outside (a stream id from a folder name or an unsigned line, a transcriber's
/// sentence) made safe to print: control characters (C0 including the line end, DEL, C1: ANSI
/// escape sequences start with one) and the Unicode bidirectional formatting characters
/// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069, which reorder what a reader sees)
/// are written as `\u{XXXX}`; everything else is kept. Borrowed when nothing needs escaping.
pub fn escape_untrusted(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape_untrusted;

    #[test]
    fn escapes_line_ends_and_bidi_controls_are_shown_not_obeyed() {
        let hostile = "ok\u{1b}[2J\u{202E}gnp.exe\u{7}\u{9b}31m\ncomplete";
        assert_eq!(
            escape_untrusted(hostile),
            "ok\\u{001B}[2J\\u{202E}gnp.exe\\u{0007}\\u{009B}31m\\u{000A}complete"
        );
        for fine in [
            "turn on the light",
            "caf\u{e9}",
            "\u{5e9}\u{5dc}\u{5d5}\u{5dd}",
            "did:keri:x",
        ] {
            assert_eq!(escape_untrusted(fine), fine);
        }
    }
}
