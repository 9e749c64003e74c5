// Package filter is the content-filter language of endpoints: a small
// boolean expression over the JSON of a callback, such as
//
//	status == "DELIVERED" && (weight > 2 || tags.priority in ["high", "urgent"]) && !exists(test)
//
// Grammar (whitespace between tokens is free):
//
//	expr    = and { "||" and }
//	and     = unary { "&&" unary }
//	unary   = "!" unary | "(" expr ")" | "exists" "(" path ")" | path op literal
//	        | path "in" "[" literal { "," literal } "]"
//	op      = "==" | "!=" | "<" | "<=" | ">" | ">="
//	literal = JSON string | JSON number | true | false | null
//	path    = segment { "." segment }, a segment being letters, digits, "_" or "-"
//
// A path names a value through object keys ("a.b": key b of object a); it
// does not index arrays. Semantics: == is true when the value is present and
// equal (numbers by value, strings byte for byte, true, false, null); != is
// the negation of == (so true when the value is absent); <, <=, >, >= compare
// two numbers, or two strings byte-wise, and are false for anything else;
// in is == against any listed literal; exists(p) is true when the key is
// present, whatever its value (null included).
//
// Parsing compiles an expression once; evaluating it reads the values at
// its paths, which the caller extracts from the callback in the single pass
// that reads it.
package filter

import (
	"fmt"
	"strconv"
)

// Limits of an expression: a filter runs on every callback that reaches its
// endpoint, so its size is bounded.
const (
	MaxLength   = 4096 // bytes of source
	MaxTerms    = 64   // comparisons, in lists and exists() together
	MaxDepth    = 32   // nesting of parentheses and !
	MaxSegments = 16   // segments of one path
	MaxInList   = 100  // literals of one in [...]
)

// Kind is the JSON type of a value found at a path.
type Kind uint8

// Kinds of values. Missing is the zero value: the path is absent.
const (
	Missing Kind = iota
	String
	Number
	Bool
	Null
	Object
	Array
)

// Value is what a callback holds at a path: its kind and, for strings,
// numbers and booleans, its text (strings unescaped, numbers as written,
// "true" or "false").
type Value struct {
	Kind Kind
	Text string
}

// Error is a syntax error at a position of the source.
type Error struct {
	Pos int // 1-based byte offset into the source
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at character %d: %s", e.Pos, e.Msg) }

// Filter is a compiled expression.
type Filter struct {
	root  node
	paths []string
}

// Paths returns the distinct paths the filter reads, in the order the
// values given to Match must follow.
func (f *Filter) Paths() []string { return f.paths }

// Match evaluates the filter; vals[i] is the value at Paths()[i].
func (f *Filter) Match(vals []Value) bool { return f.root.eval(vals) }

type node interface {
	eval(vals []Value) bool
}

type orNode struct{ l, r node }
type andNode struct{ l, r node }
type notNode struct{ x node }
type existsNode struct{ path int }

// cmpNode compares the value at path with one literal (op "in": any of
// several, with ==).
type cmpNode struct {
	path int
	op   string
	lits []Value
	nums []float64 // the literals' numeric values, for Number literals
}

func (n orNode) eval(v []Value) bool     { return n.l.eval(v) || n.r.eval(v) }
func (n andNode) eval(v []Value) bool    { return n.l.eval(v) && n.r.eval(v) }
func (n notNode) eval(v []Value) bool    { return !n.x.eval(v) }
func (n existsNode) eval(v []Value) bool { return v[n.path].Kind != Missing }

func (n *cmpNode) eval(vals []Value) bool {
	v := vals[n.path]
	switch n.op {
	case "==", "in":
		for i := range n.lits {
			if n.equal(v, i) {
				return true
			}
		}
		return false
	case "!=":
		return !n.equal(v, 0)
	}
	lit := n.lits[0]
	var c int
	switch {
	case v.Kind == Number && lit.Kind == Number:
		x, err := strconv.ParseFloat(v.Text, 64)
		if err != nil {
			return false
		}
		y := n.nums[0]
		switch {
		case x < y:
			c = -1
		case x > y:
			c = 1
		}
	case v.Kind == String && lit.Kind == String:
		switch {
		case v.Text < lit.Text:
			c = -1
		case v.Text > lit.Text:
			c = 1
		}
	default:
		return false
	}
	switch n.op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	default: // ">="
		return c >= 0
	}
}

func (n *cmpNode) equal(v Value, i int) bool {
	lit := n.lits[i]
	if v.Kind != lit.Kind {
		return false
	}
	switch v.Kind {
	case Number:
		if v.Text == lit.Text {
			return true
		}
		x, err := strconv.ParseFloat(v.Text, 64)
		return err == nil && x == n.nums[i]
	case Null:
		return true
	default:
		return v.Text == lit.Text
	}
}
