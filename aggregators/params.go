package aggregators

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gopkg.in/yaml.v3"
)

// Params are an aggregate's kind-specific settings (the YAML "params"
// mapping), one typed struct per kind: KMParams (km, windowed or
// cumulative), WeibullParams or DiscreteParams; nil stands for the kind's
// defaults. Each kind decodes its own from YAML (its params method,
// through DecodeParams) and reads them back with paramsOf; a Config whose
// params are another kind's is refused by Check.
type Params interface {
	// flat is the params in the fingerprint's frozen layout.
	flat() flatParams
}

// paramsOf returns c's params as the kind's type P: P's zero value when c
// has none (or another kind's: Check refuses those).
func paramsOf[P Params](c Config) P {
	p, _ := c.Params.(P)
	return p
}

// rawParams is a YAML params node not yet decoded (Config.UnmarshalYAML
// keeps it until Config.Resolved, which knows the kind).
type rawParams struct{ n *yaml.Node }

func (rawParams) flat() flatParams { return flatParams{} }

// DecodeParams decodes an aggregate's YAML params mapping into the typed
// params of kind, accepting the kind's keys only: the kind's params method
// names each key it reads and its type (km.go, weibull.go, discrete.go; an
// unknown kind reads bin_width and method, so that the kind's own error is
// the one reported). Every problem is a *FieldError at "params.<key>" (or
// "params.<key>[i]"), wrapping ErrUnknownField or ErrWrongType, in the
// order of the keys; values are range-checked later, by Config.Check.
// Empty params decode to the kind's zero params.
func DecodeParams(kind string, n *yaml.Node) (Params, error) {
	d := &paramDecoder{}
	k := kindOf(Config{Kind: kind})
	if n == nil || n.Kind == 0 {
		return k.params(d), nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Tag == "!!null" {
		return k.params(d), nil
	}
	if n.Kind != yaml.MappingNode {
		return k.params(d), fieldErr("params", ErrWrongType, "want a mapping, got %s", goType(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		d.entries = append(d.entries, paramEntry{key: n.Content[i].Value, val: n.Content[i+1]})
	}
	sort.SliceStable(d.entries, func(i, j int) bool { return d.entries[i].key < d.entries[j].key })
	p := k.params(d)
	var errs []error
	for _, e := range d.entries {
		if !e.read {
			errs = append(errs, fieldErr("params."+e.key, ErrUnknownField, "unknown for kind %s", kind))
		}
		errs = append(errs, e.errs...)
	}
	return p, errors.Join(append(errs, d.late...)...)
}

// paramDecoder hands a kind the entries of a params mapping by key: each
// typed read (float, str, int, floats, names) decodes every entry of its
// key into the kind's field, in order (the last one wins). An entry no
// read asked for is an unknown key.
type paramDecoder struct {
	entries []paramEntry // sorted by key
	// late are errors about the params as a whole, reported after the
	// keys' own.
	late []error
}

type paramEntry struct {
	key  string
	val  *yaml.Node
	read bool
	errs []error
}

// each calls set with the path and value of every entry of key.
func (d *paramDecoder) each(key string, set func(path string, n *yaml.Node) error) {
	for i := range d.entries {
		e := &d.entries[i]
		if e.key != key {
			continue
		}
		e.read = true
		if err := set("params."+key, e.val); err != nil {
			e.errs = append(e.errs, Errors(err)...)
		}
	}
}

// str reads a string.
func (d *paramDecoder) str(key string, dst *string) {
	d.each(key, func(path string, n *yaml.Node) error {
		if !isScalar(n, "!!str") {
			return fieldErr(path, ErrWrongType, "want a string, got %s", goType(n))
		}
		*dst = n.Value
		return nil
	})
}

// float reads a number; zero reports whether the field was 0 after any
// entry of key (an explicit 0, or a bad value left at 0).
func (d *paramDecoder) float(key string, dst *float64) (zero bool) {
	d.each(key, func(path string, n *yaml.Node) error {
		x, ok := number(n)
		if !ok {
			zero = zero || *dst == 0
			return fieldErr(path, ErrWrongType, "want a number, got %s", goType(n))
		}
		*dst = x
		zero = zero || x == 0
		return nil
	})
	return zero
}

// defaultIntLimit bounds an integer param read by int without a limit.
const defaultIntLimit = 1 << 40

// int reads an integer of at most limit in magnitude (limitText in the
// error; "" for defaultIntLimit).
func (d *paramDecoder) int(key string, dst *int, limit float64, limitText string) {
	d.each(key, func(path string, n *yaml.Node) error {
		x, ok := number(n)
		switch {
		case !ok || x != math.Trunc(x):
			return fieldErr(path, ErrWrongType, "want an integer, got %s", n.Value)
		case math.Abs(x) > limit:
			return fieldErr(path, ErrInvalid, "want an integer of at most %s in size, got %s", limitText, n.Value)
		}
		*dst = int(x)
		return nil
	})
}

// floats reads a list of numbers (a bad element is an error at its index
// and reads as 0).
func (d *paramDecoder) floats(key string, dst *[]float64) {
	readList(d, key, dst, "numbers", "a number", number)
}

// names reads a list of strings (a bad element is an error at its index
// and reads as "").
func (d *paramDecoder) names(key string, dst *[]string) {
	readList(d, key, dst, "names", "a name", func(c *yaml.Node) (string, bool) { return c.Value, isScalar(c, "!!str") })
}

// readList reads a list whose elements elem decodes (ok false: the element
// is not of the kind, an error at its index, read as T's zero value);
// plural and singular name the element kind in the errors.
func readList[T any](d *paramDecoder, key string, dst *[]T, plural, singular string, elem func(*yaml.Node) (T, bool)) {
	d.each(key, func(path string, n *yaml.Node) error {
		if n.Kind != yaml.SequenceNode {
			return fieldErr(path, ErrWrongType, "want a list of %s, got %s", plural, goType(n))
		}
		var errs []error
		out := make([]T, len(n.Content))
		for i, c := range n.Content {
			x, ok := elem(c)
			if !ok {
				errs = append(errs, fieldErr(fmt.Sprintf("%s[%d]", path, i), ErrWrongType, "want %s, got %s", singular, goType(c)))
				continue
			}
			out[i] = x
		}
		*dst = out
		return errors.Join(errs...)
	})
}

func isScalar(n *yaml.Node, tag string) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == tag
}

// number reads an !!int or !!float scalar.
func number(n *yaml.Node) (float64, bool) {
	if !isScalar(n, "!!int") && !isScalar(n, "!!float") {
		return 0, false
	}
	var x float64
	if err := n.Decode(&x); err != nil {
		return 0, false
	}
	return x, true
}

// goType names a YAML value by the Go type it decodes to by default (as
// the messages of the map-based decoder did).
func goType(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "[]interface {}"
	case yaml.MappingNode:
		return "map[string]interface {}"
	case yaml.AliasNode:
		return "alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return "string"
	case "!!int":
		return "int"
	case "!!float":
		return "float64"
	case "!!bool":
		return "bool"
	case "!!null":
		return "<nil>"
	}
	return n.ShortTag()
}
