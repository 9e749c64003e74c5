package filter

import "fmt"

type tokKind uint8

const (
	tEOF tokKind = iota
	tBad
	tPath // identifiers and dot paths (also true, false, null, in, exists)
	tString
	tNumber
	tOp // == != < <= > >=
	tAnd
	tOr
	tNot
	tLParen
	tRParen
	tLBracket
	tRBracket
	tComma
)

type token struct {
	kind tokKind
	text string
	pos  int // 0-based byte offset
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the filter"
	case tBad:
		if t.text == "unterminated string" {
			return "a string without its closing quote"
		}
		return fmt.Sprintf("unexpected character %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func isPathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// next scans the next token into p.tok.
func (p *parser) next() {
	s := p.src
	for p.pos < len(s) && (s[p.pos] == ' ' || s[p.pos] == '\t' || s[p.pos] == '\n' || s[p.pos] == '\r') {
		p.pos++
	}
	start := p.pos
	if start >= len(s) {
		p.tok = token{kind: tEOF, pos: start}
		return
	}
	tok := func(k tokKind, n int) {
		p.pos = start + n
		p.tok = token{kind: k, text: s[start:p.pos], pos: start}
	}
	two := ""
	if start+1 < len(s) {
		two = s[start : start+2]
	}
	c := s[start]
	switch {
	case two == "&&":
		tok(tAnd, 2)
	case two == "||":
		tok(tOr, 2)
	case two == "==" || two == "!=" || two == "<=" || two == ">=":
		tok(tOp, 2)
	case c == '<' || c == '>':
		tok(tOp, 1)
	case c == '!':
		tok(tNot, 1)
	case c == '(':
		tok(tLParen, 1)
	case c == ')':
		tok(tRParen, 1)
	case c == '[':
		tok(tLBracket, 1)
	case c == ']':
		tok(tRBracket, 1)
	case c == ',':
		tok(tComma, 1)
	case c == '"':
		i := start + 1
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(s) {
			p.pos = len(s)
			p.tok = token{kind: tBad, text: "unterminated string", pos: start}
			return
		}
		tok(tString, i+1-start)
	case c == '-' || c >= '0' && c <= '9' && !p.pathAhead(start):
		i := start + 1
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' || s[i] == '-') {
			i++
		}
		tok(tNumber, i-start)
	case isPathByte(c):
		i := start
		for i < len(s) && isPathByte(s[i]) {
			i++
		}
		tok(tPath, i-start)
	default:
		tok(tBad, 1)
	}
}

// pathAhead reports whether the run of path bytes at i holds a letter or _,
// so "2nd.item" is a path while "2.5" is a number.
func (p *parser) pathAhead(i int) bool {
	for ; i < len(p.src) && isPathByte(p.src[i]); i++ {
		c := p.src[i]
		if c >= 'a' && c <= 'z' && c != 'e' || c >= 'A' && c <= 'Z' && c != 'E' || c == '_' {
			return true
		}
	}
	return false
}

// peekParen reports whether the next non-blank byte is "(".
func (p *parser) peekParen() bool {
	i := p.pos
	for i < len(p.src) && (p.src[i] == ' ' || p.src[i] == '\t' || p.src[i] == '\n' || p.src[i] == '\r') {
		i++
	}
	return i < len(p.src) && p.src[i] == '('
}
