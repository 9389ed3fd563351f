//! Splits SQL text into statements at top-level `;`, as psql does: a `;` inside a string,
//! a quoted identifier, a dollar-quoted body, a comment or parentheses does not end a
//! statement.
//!
//! The shell reads a line at a time, so the splitter is incremental: it keeps its lexical
//! state between lines and scans only what is new. Statements are executed one at a time,
//! so an error's position (relative to the text executed) maps onto the statement's own
//! lines for the caret.
//!
//! The lexer works on bytes: every character that matters (quotes, `$`, `-`, `/`, `*`,
//! `;`, parentheses, newline) is ASCII, and no byte of a multi-byte UTF-8 character is.

/// Where the lexer is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Lex {
    Code,
    /// In `'…'`; `escapes` for `E'…'`, where a backslash escapes the next character.
    Quote {
        escapes: bool,
    },
    /// In a `"…"` identifier.
    Ident,
    LineComment,
    /// In `/* … */`, which nest in PostgreSQL: the depth.
    BlockComment(u32),
    /// In a `$tag$ … $tag$` body: the tag, `$` included at both ends.
    Dollar(String),
}

/// What a byte is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Code,
    /// Inside a literal or a quoted identifier (its delimiters included).
    Literal,
    Comment,
}

/// A byte that may continue an identifier (non-ASCII letters are identifier characters in
/// PostgreSQL, so every byte of a multi-byte character counts).
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The lexer's state between bytes, and the depth of parentheses in code.
#[derive(Clone, Debug)]
struct Lexer {
    state: Lex,
    parens: u32,
}

impl Lexer {
    fn new() -> Lexer {
        Lexer {
            state: Lex::Code,
            parens: 0,
        }
    }

    /// Classifies the token that starts at `b[i]` and returns its class and length in
    /// bytes (at least 1). Two-byte tokens (`--`, `/*`, `*/`, `''`, `\'`) look one byte
    /// ahead; callers feed whole lines, so no such token is cut in two.
    fn step(&mut self, b: &[u8], i: usize) -> (Class, usize) {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match &mut self.state {
            Lex::Code => self.step_code(b, i),
            Lex::Quote { escapes } => {
                if *escapes && c == b'\\' {
                    (Class::Literal, if next.is_some() { 2 } else { 1 })
                } else if c == b'\'' && next == Some(b'\'') {
                    (Class::Literal, 2)
                } else {
                    if c == b'\'' {
                        self.state = Lex::Code;
                    }
                    (Class::Literal, 1)
                }
            }
            Lex::Ident => {
                if c == b'"' && next == Some(b'"') {
                    (Class::Literal, 2)
                } else {
                    if c == b'"' {
                        self.state = Lex::Code;
                    }
                    (Class::Literal, 1)
                }
            }
            Lex::LineComment => {
                if c == b'\n' {
                    // The newline ends the comment and is whitespace between tokens.
                    self.state = Lex::Code;
                    (Class::Code, 1)
                } else {
                    (Class::Comment, 1)
                }
            }
            Lex::BlockComment(depth) => {
                if c == b'/' && next == Some(b'*') {
                    *depth += 1;
                    (Class::Comment, 2)
                } else if c == b'*' && next == Some(b'/') {
                    *depth -= 1;
                    if *depth == 0 {
                        self.state = Lex::Code;
                    }
                    (Class::Comment, 2)
                } else {
                    (Class::Comment, 1)
                }
            }
            Lex::Dollar(tag) => {
                if b[i..].starts_with(tag.as_bytes()) {
                    let len = tag.len();
                    self.state = Lex::Code;
                    (Class::Literal, len)
                } else {
                    (Class::Literal, 1)
                }
            }
        }
    }

    /// A token that starts in code.
    fn step_code(&mut self, b: &[u8], i: usize) -> (Class, usize) {
        let prev = i.checked_sub(1).map(|p| b[p]);
        match (b[i], b.get(i + 1).copied()) {
            (b'-', Some(b'-')) => {
                self.state = Lex::LineComment;
                (Class::Comment, 2)
            }
            (b'/', Some(b'*')) => {
                self.state = Lex::BlockComment(1);
                (Class::Comment, 2)
            }
            (b'\'', _) => {
                // E'…' (but not the end of an identifier such as `type'`).
                let escapes =
                    matches!(prev, Some(b'E' | b'e')) && (i < 2 || !is_ident_byte(b[i - 2]));
                self.state = Lex::Quote { escapes };
                (Class::Literal, 1)
            }
            (b'"', _) => {
                self.state = Lex::Ident;
                (Class::Literal, 1)
            }
            (b'$', _) if !prev.is_some_and(is_ident_byte) => match dollar_tag(b, i) {
                Some(tag) => {
                    let len = tag.len();
                    self.state = Lex::Dollar(tag);
                    (Class::Literal, len)
                }
                // `$1`, a parameter.
                None => (Class::Code, 1),
            },
            (b'(', _) => {
                self.parens += 1;
                (Class::Code, 1)
            }
            (b')', _) => {
                self.parens = self.parens.saturating_sub(1);
                (Class::Code, 1)
            }
            _ => (Class::Code, 1),
        }
    }
}

/// The dollar-quote tag (`$$`, `$body$`) that starts at `b[i]`, if one does.
fn dollar_tag(b: &[u8], i: usize) -> Option<String> {
    let mut j = i + 1;
    if b.get(j)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c >= 0x80)
    {
        while b.get(j).is_some_and(|c| *c != b'$' && is_ident_byte(*c)) {
            j += 1;
        }
    }
    if b.get(j) == Some(&b'$') {
        String::from_utf8(b[i..=j].to_vec()).ok()
    } else {
        None
    }
}

/// One complete statement, as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// From its first token (leading blanks and comments left out) to its `;`, if any.
    pub text: String,
    /// The line of the input its first token is on (1-based).
    pub line: usize,
}

/// Splits text fed in whole lines into statements.
#[derive(Debug)]
pub struct Splitter {
    buf: String,
    /// Bytes of `buf` scanned so far.
    scanned: usize,
    /// Where the current statement starts in `buf`.
    start: usize,
    lexer: Lexer,
    /// The current statement has a token (not only blanks and comments).
    content: bool,
    /// The input line `buf[scanned]` is on, and the line of the current statement's first
    /// token.
    line: usize,
    first_line: usize,
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter {
            buf: String::new(),
            scanned: 0,
            start: 0,
            lexer: Lexer::new(),
            content: false,
            line: 1,
            first_line: 1,
        }
    }

    /// Adds one line (a newline is added after it) and returns the statements it
    /// completed. Statements with no token (`;;`, a comment) are left out.
    pub fn push_line(&mut self, line: &str) -> Vec<Statement> {
        self.buf.push_str(line);
        self.buf.push('\n');
        let mut done = Vec::new();
        let bytes = self.buf.as_bytes();
        let mut i = self.scanned;
        while i < bytes.len() {
            let code = self.lexer.state == Lex::Code;
            let (class, len) = self.lexer.step(bytes, i);
            let c = bytes[i];
            if code && c == b';' && self.lexer.parens == 0 {
                if self.content {
                    done.push(statement(&self.buf[self.start..=i], self.first_line));
                }
                self.start = i + 1;
                self.content = false;
            } else if !self.content
                && (class == Class::Literal || !c.is_ascii_whitespace())
                && class != Class::Comment
            {
                self.content = true;
                self.first_line = self.line;
            }
            self.line += bytes[i..i + len].iter().filter(|b| **b == b'\n').count();
            i += len;
        }
        // Keep only the unfinished statement.
        self.buf.drain(..self.start);
        self.scanned = self.buf.len();
        self.start = 0;
        done
    }

    /// The unfinished statement at the end of the input, if it has a token (psql runs it
    /// at the end of a script too).
    pub fn finish(&mut self) -> Option<Statement> {
        let rest = self.content.then(|| statement(&self.buf, self.first_line));
        self.clear();
        rest
    }

    /// Forgets the unfinished statement (the shell's Ctrl-C).
    pub fn clear(&mut self) {
        let line = self.line;
        *self = Splitter::new();
        self.line = line;
    }

    /// Counts a line that is not SQL (a backslash command) and returns its number.
    pub fn skip_line(&mut self) -> usize {
        self.line += 1;
        self.line - 1
    }

    /// Nothing unfinished: no token since the last `;`, and not in a literal or comment.
    pub fn is_idle(&self) -> bool {
        !self.content && self.lexer.state == Lex::Code && self.lexer.parens == 0
    }

    /// In code (not in a literal or comment), where a line may be a backslash command.
    pub fn in_code(&self) -> bool {
        self.lexer.state == Lex::Code
    }
}

/// A statement from its first token, trailing blanks left out.
fn statement(raw: &str, line: usize) -> Statement {
    let flat = flatten(raw);
    // Leading comments are blanks in the flattened text; it has the same characters, one
    // for one, so the first token is at the same character in both.
    let lead = flat.chars().take_while(|c| c.is_whitespace()).count();
    let text: String = raw.chars().skip(lead).collect();
    Statement {
        text: text.trim_end().to_string(),
        line,
    }
}

/// The text with every comment character and every line break outside literals made a
/// space: the same tokens, on one line (unless a literal holds a line break), with the
/// same number of characters. The SQL layer gives a position only for what is on the
/// first line of the text it runs, so running this instead keeps the position of an
/// error on any line of the statement, and the position is the same in both texts.
pub fn flatten(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut lexer = Lexer::new();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let (class, len) = lexer.step(bytes, i);
        // Byte by byte: a token of the lexer may end inside a multi-byte character.
        for &b in &bytes[i..i + len] {
            let is_continuation = b & 0xC0 == 0x80;
            match class {
                // One space for each character: its first byte, not its continuations.
                Class::Comment if !is_continuation => out.push(b' '),
                Class::Comment => {}
                Class::Code if b == b'\n' || b == b'\r' => out.push(b' '),
                Class::Code | Class::Literal => out.push(b),
            }
        }
        i += len;
    }
    if matches!(lexer.state, Lex::BlockComment(_)) {
        // A comment that never ends: the text as it is, for the SQL layer to refuse
        // (42601). Blanked out, it ran what came before it and dropped the rest of the
        // script inside it.
        return text.to_string();
    }
    // Only whole characters were replaced, so this is UTF-8; the text as it is would do too.
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<String> {
        let mut s = Splitter::new();
        let mut out: Vec<String> = Vec::new();
        for line in text.lines() {
            out.extend(s.push_line(line).into_iter().map(|st| st.text));
        }
        out.extend(s.finish().map(|st| st.text));
        out
    }

    #[test]
    fn a_block_comment_that_never_ends_is_not_blanked_out() {
        let text = "INSERT INTO t VALUES (7) /* x;\nSELECT 2;";
        assert_eq!(split(text), [text]);
        assert_eq!(flatten(text), text);
        assert_eq!(flatten("SELECT 1 /* done */"), "SELECT 1           ");
    }

    #[test]
    fn splits_at_top_level_semicolons_only() {
        assert_eq!(
            split("SELECT 1; SELECT ';' AS a;\nSELECT \"x;y\" FROM t"),
            ["SELECT 1;", "SELECT ';' AS a;", "SELECT \"x;y\" FROM t"]
        );
        assert_eq!(
            split("SELECT $$a;b$$, $q$;$$;$q$; SELECT f($1);"),
            ["SELECT $$a;b$$, $q$;$$;$q$;", "SELECT f($1);"]
        );
        assert_eq!(
            split("SELECT E'it\\'s;', 'a''b;'; SELECT 2"),
            ["SELECT E'it\\'s;', 'a''b;';", "SELECT 2"]
        );
        assert_eq!(
            split("-- a; comment\nSELECT /* x; /* nested; */ y; */ 1;"),
            ["SELECT /* x; /* nested; */ y; */ 1;"]
        );
        assert_eq!(
            split("CREATE RULE r AS ON INSERT TO t DO (SELECT 1; SELECT 2);"),
            ["CREATE RULE r AS ON INSERT TO t DO (SELECT 1; SELECT 2);"]
        );
        assert_eq!(split(";;  ; -- nothing\n"), Vec::<String>::new());
    }

    #[test]
    fn a_statement_goes_on_over_lines_and_knows_its_first_line() {
        let mut s = Splitter::new();
        assert!(s.push_line("").is_empty());
        assert!(s.push_line("SELECT 'a").is_empty());
        assert!(!s.in_code());
        assert!(s.push_line("b' FROM").is_empty());
        assert!(!s.is_idle());
        let done = s.push_line("t; SELECT");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].text, "SELECT 'a\nb' FROM\nt;");
        assert_eq!(done[0].line, 2);
        assert!(!s.is_idle());
        let rest = s.finish().expect("the unfinished statement");
        assert_eq!((rest.text.as_str(), rest.line), ("SELECT", 4));
        assert!(s.is_idle());
    }

    #[test]
    fn flatten_keeps_characters_one_for_one() {
        let text = "SELECT a, -- é;\n  b /* ü\n */ FROM t\nWHERE c = 'x\ny'";
        let flat = flatten(text);
        assert_eq!(flat.chars().count(), text.chars().count());
        let expected = format!(
            "SELECT a,{}b{}FROM t WHERE c = 'x\ny'",
            " ".repeat(9),
            " ".repeat(10)
        );
        assert_eq!(flat, expected);
    }
}
