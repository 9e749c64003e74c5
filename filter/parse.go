package filter

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Parse compiles src. An empty (or blank) src is an error: an endpoint
// without a filter has none rather than an empty one.
func Parse(src string) (*Filter, error) {
	if len(src) > MaxLength {
		return nil, &Error{Pos: MaxLength + 1, Msg: "filter longer than " + strconv.Itoa(MaxLength) + " bytes"}
	}
	p := &parser{src: src, index: map[string]int{}}
	p.next()
	if p.tok.kind == tEOF {
		return nil, &Error{Pos: 1, Msg: "empty filter"}
	}
	root, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errf("unexpected %s", p.tok.describe())
	}
	return &Filter{root: root, paths: p.paths}, nil
}

type parser struct {
	src   string
	pos   int // next byte to scan
	tok   token
	terms int
	paths []string
	index map[string]int
}

func (p *parser) errf(format string, args ...any) error {
	msg := format
	if len(args) > 0 {
		msg = sprintf(format, args...)
	}
	return &Error{Pos: p.tok.pos + 1, Msg: msg}
}

func (p *parser) expr(depth int) (node, error) {
	if depth > MaxDepth {
		return nil, p.errf("nested deeper than %d", MaxDepth)
	}
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tOr {
		p.next()
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = orNode{l, r}
	}
	return l, nil
}

func (p *parser) and(depth int) (node, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tAnd {
		p.next()
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = andNode{l, r}
	}
	return l, nil
}

func (p *parser) unary(depth int) (node, error) {
	if depth > MaxDepth {
		return nil, p.errf("nested deeper than %d", MaxDepth)
	}
	switch p.tok.kind {
	case tNot:
		p.next()
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return notNode{x}, nil
	case tLParen:
		p.next()
		x, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.errf("expected ) but found %s", p.tok.describe())
		}
		p.next()
		return x, nil
	case tPath:
		if p.tok.text == "exists" && p.peekParen() {
			return p.exists()
		}
		return p.comparison()
	}
	return nil, p.errf("expected a path, ( or ! but found %s", p.tok.describe())
}

func (p *parser) exists() (node, error) {
	p.next() // exists
	p.next() // (
	if p.tok.kind != tPath {
		return nil, p.errf("exists( wants a path but found %s", p.tok.describe())
	}
	path, err := p.pathIndex()
	if err != nil {
		return nil, err
	}
	p.next()
	if p.tok.kind != tRParen {
		return nil, p.errf("expected ) but found %s", p.tok.describe())
	}
	p.next()
	return existsNode{path}, nil
}

func (p *parser) comparison() (node, error) {
	path, err := p.pathIndex()
	if err != nil {
		return nil, err
	}
	p.next()
	n := &cmpNode{path: path}
	switch {
	case p.tok.kind == tOp:
		n.op = p.tok.text
		p.next()
		lit, num, err := p.literal()
		if err != nil {
			return nil, err
		}
		n.lits, n.nums = []Value{lit}, []float64{num}
		return n, nil
	case p.tok.kind == tPath && p.tok.text == "in":
		n.op = "in"
		p.next()
		if p.tok.kind != tLBracket {
			return nil, p.errf("expected [ after in but found %s", p.tok.describe())
		}
		p.next()
		for {
			if len(n.lits) == MaxInList {
				return nil, p.errf("more than %d values in one in [...]", MaxInList)
			}
			lit, num, err := p.literal()
			if err != nil {
				return nil, err
			}
			n.lits, n.nums = append(n.lits, lit), append(n.nums, num)
			if p.tok.kind == tRBracket {
				p.next()
				return n, nil
			}
			if p.tok.kind != tComma {
				return nil, p.errf("expected , or ] but found %s", p.tok.describe())
			}
			p.next()
		}
	}
	return nil, p.errf("expected an operator (==, !=, <, <=, >, >=, in) after the path but found %s", p.tok.describe())
}

// pathIndex registers the path token and counts a term.
func (p *parser) pathIndex() (int, error) {
	p.terms++
	if p.terms > MaxTerms {
		return 0, p.errf("more than %d comparisons", MaxTerms)
	}
	path := p.tok.text
	if strings.Count(path, ".")+1 > MaxSegments {
		return 0, p.errf("path %q has more than %d segments", path, MaxSegments)
	}
	for _, seg := range strings.Split(path, ".") {
		if seg == "" {
			return 0, p.errf("path %q has an empty segment", path)
		}
	}
	i, ok := p.index[path]
	if !ok {
		i = len(p.paths)
		p.index[path] = i
		p.paths = append(p.paths, path)
	}
	return i, nil
}

// literal reads a literal and advances past it.
func (p *parser) literal() (Value, float64, error) {
	t := p.tok
	switch t.kind {
	case tString:
		var s string
		if err := json.Unmarshal([]byte(t.text), &s); err != nil {
			return Value{}, 0, p.errf("invalid string %s", t.text)
		}
		p.next()
		return Value{Kind: String, Text: s}, 0, nil
	case tNumber:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil || !json.Valid([]byte(t.text)) {
			return Value{}, 0, p.errf("invalid number %s", t.text)
		}
		p.next()
		return Value{Kind: Number, Text: t.text}, f, nil
	case tPath:
		switch t.text {
		case "true", "false":
			p.next()
			return Value{Kind: Bool, Text: t.text}, 0, nil
		case "null":
			p.next()
			return Value{Kind: Null}, 0, nil
		}
	}
	return Value{}, 0, p.errf("expected a value (a string in double quotes, a number, true, false or null) but found %s", t.describe())
}
