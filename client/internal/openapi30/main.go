// Command openapi30 rewrites openapi/openapi.json (OpenAPI 3.1) into the
// OpenAPI 3.0 dialect the client generator (oapi-codegen) reads, for `make
// generate`: a type list with "null" becomes the type and "nullable", any
// other type list an untyped schema, a {"type": "null"} alternative of a
// oneOf is dropped (the schema becomes nullable), "const" becomes a
// one-value "enum", and a property that takes any JSON value is generated
// as json.RawMessage (its bytes as received). Nothing else changes.
//
//	go run ./client/internal/openapi30 openapi/openapi.json > openapi30.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi30 <openapi.json>")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	doc["openapi"] = "3.0.3"
	rewrite(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(append(out, '\n'))
}

// untyped reports whether schema s takes any JSON value.
func untyped(s map[string]any) bool {
	for _, k := range []string{"type", "$ref", "oneOf", "allOf", "anyOf", "enum", "const", "properties", "items"} {
		if _, ok := s[k]; ok {
			return false
		}
	}
	return true
}

// rewrite rewrites every schema under v in place.
func rewrite(v any) {
	switch x := v.(type) {
	case map[string]any:
		if types, ok := x["type"].([]any); ok {
			var rest []any
			for _, t := range types {
				if t == "null" {
					x["nullable"] = true
				} else {
					rest = append(rest, t)
				}
			}
			if len(rest) == 1 {
				x["type"] = rest[0]
			} else {
				delete(x, "type")
			}
		}
		if c, ok := x["const"]; ok {
			x["enum"] = []any{c}
			delete(x, "const")
		}
		if alts, ok := x["oneOf"].([]any); ok {
			var keep []any
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && m["type"] == "null" && len(m) == 1 {
					x["nullable"] = true
					continue
				}
				keep = append(keep, a)
			}
			if len(keep) == 1 {
				delete(x, "oneOf")
				x["allOf"] = keep
			} else {
				x["oneOf"] = keep
			}
		}
		delete(x, "examples")
		if props, ok := x["properties"].(map[string]any); ok {
			for _, p := range props {
				if m, ok := p.(map[string]any); ok && untyped(m) {
					// Any JSON value (a pull event's body): kept as its
					// bytes, over which its signature is made.
					m["x-go-type"] = "json.RawMessage"
				}
			}
		}
		for _, child := range x {
			rewrite(child)
		}
	case []any:
		for _, child := range x {
			rewrite(child)
		}
	}
}
