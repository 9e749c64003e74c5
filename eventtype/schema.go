// Package eventtype is the catalog of canonical event types: the rules of
// their names, schemas and examples (checked when one is written), and
// Catalog, which validates an event's data against its type's current JSON
// Schema with the schemas compiled once per version and kept in step with
// the database by every process.
package eventtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hookrelay/hookrelay"
)

// Limits of what an event type holds.
const (
	// MaxNameLength bounds a type's name (the database checks it too).
	MaxNameLength = 128
	// MaxDescriptionLength bounds a description, in characters.
	MaxDescriptionLength = 2000
	// MaxSchemaBytes bounds a schema's JSON.
	MaxSchemaBytes = 64 << 10
	// MaxExampleBytes bounds each example's JSON.
	MaxExampleBytes = 64 << 10
	// MaxExamples bounds the examples of a version.
	MaxExamples = 20
	// MaxErrorLength bounds the message of a validation error, so that it
	// fits an answer's body.
	MaxErrorLength = 400
)

// nameRE is the form of a name: lowercase words of letters, digits, "_"
// and "-", separated by dots (tracking.updated). Migration 00360 checks the
// same.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$`)

// CheckName returns a hookrelay.EINVALID error when name is not a valid
// event type name.
func CheckName(name string) error {
	if name == "" {
		return hookrelay.Errorf(hookrelay.EINVALID, "name is required")
	}
	if len(name) > MaxNameLength || !nameRE.MatchString(name) {
		return hookrelay.Errorf(hookrelay.EINVALID,
			"name must be lowercase words (a-z, 0-9, _ or -, each starting with a letter) separated by dots, like tracking.updated, at most %d characters", MaxNameLength)
	}
	return nil
}

// CheckDescription returns a hookrelay.EINVALID error naming field when
// text (a description or a deprecation note) is longer than
// MaxDescriptionLength characters or not text the database can store.
func CheckDescription(field, text string) error {
	if err := hookrelay.CheckText(field, text, 0); err != nil {
		return err
	}
	if utf8.RuneCountInString(text) > MaxDescriptionLength {
		return hookrelay.Errorf(hookrelay.EINVALID, "%s is longer than %d characters", field, MaxDescriptionLength)
	}
	return nil
}

// refuseLoader is the compiler's URL loader: schemas are self-contained, a
// $ref outside the schema (or the drafts' meta-schemas, which the compiler
// holds) is refused rather than fetched.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("a $ref outside the schema is not loaded; event type schemas must be self-contained")
}

// resourceURL is the location the compiler gives a schema (its $id, if
// any, takes over): absolute, so that nothing resolves against the
// process's directory, and of a reserved domain, so that a relative $ref
// names nothing that could be fetched.
const resourceURL = "https://event-type.invalid/schema.json"

// Compile compiles a JSON Schema: draft 2020-12 unless its $schema names
// another, format assertions on (date-time, email, ...), no remote $ref.
// A schema that is not a JSON object or does not compile is a
// hookrelay.EINVALID error quoting the compiler.
func Compile(schema []byte) (*jsonschema.Schema, error) {
	if len(schema) == 0 {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema is required")
	}
	if len(schema) > MaxSchemaBytes {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema is larger than %d bytes", MaxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema is not valid JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema must be a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema: %s", short(err.Error()))
	}
	sch, err := c.Compile(resourceURL)
	var meta *jsonschema.SchemaValidationError
	switch {
	case errors.As(err, &meta):
		// Not a schema by its draft's meta-schema: the place in the
		// schema and the rule it breaks.
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema does not compile: %s", describe(meta.Err))
	case err != nil:
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "schema does not compile: %s", short(err.Error()))
	}
	return sch, nil
}

// CheckExamples checks examples, a JSON array (empty or absent: none),
// against sch and returns them as the array to store. An example that does
// not match is a hookrelay.EINVALID error naming its index and the error.
func CheckExamples(sch *jsonschema.Schema, examples []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(examples)) == 0 || string(bytes.TrimSpace(examples)) == "null" {
		return json.RawMessage("[]"), nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(examples, &list); err != nil {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "examples must be a JSON array of events' data")
	}
	if len(list) > MaxExamples {
		return nil, hookrelay.Errorf(hookrelay.EINVALID, "at most %d examples", MaxExamples)
	}
	for i, ex := range list {
		if len(ex) > MaxExampleBytes {
			return nil, hookrelay.Errorf(hookrelay.EINVALID, "examples[%d] is larger than %d bytes", i, MaxExampleBytes)
		}
		v, err := decode(ex)
		if err != nil {
			return nil, hookrelay.Errorf(hookrelay.EINVALID, "examples[%d] is not valid JSON: %v", i, err)
		}
		if err := sch.Validate(v); err != nil {
			return nil, hookrelay.Errorf(hookrelay.EINVALID, "examples[%d] does not match the schema: %s", i, describe(err))
		}
	}
	return examples, nil
}

// describe returns a short account of a validation error: the first
// failing instance path, its keyword and message, and how many more
// failures there are.
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return short(err.Error())
	}
	leaves := 0
	var first *jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if first == nil {
				first = e
			}
			leaves++
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	var b strings.Builder
	b.WriteString("at ")
	b.WriteString(pointer(first.InstanceLocation))
	if kw := first.ErrorKind.KeywordPath(); len(kw) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(kw, "/"))
	}
	b.WriteString(": ")
	// The error of a leaf is "at '<path>': <message>"; keep the message.
	msg := first.Error()
	if _, m, ok := strings.Cut(msg, "': "); ok {
		msg = m
	}
	b.WriteString(msg)
	if leaves > 1 {
		fmt.Fprintf(&b, " (and %d more)", leaves-1)
	}
	return short(b.String())
}

// pointer writes an instance location as a JSON pointer ("/" for the
// document itself).
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// short makes a message one line of at most MaxErrorLength bytes.
func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxErrorLength {
		return s
	}
	cut := MaxErrorLength - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
