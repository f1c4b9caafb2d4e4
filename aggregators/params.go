package aggregators

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dpsurv/dpsurv/regression"
	"gopkg.in/yaml.v3"
)

// paramField is one settable field of Params: its YAML key, the kinds that
// accept it (struct tag kinds; "other" is any kind that is not known, so
// that the kind's own error is the one reported) and its integer limit.
type paramField struct {
	index     []int
	typ       reflect.Type
	kinds     []string
	limit     float64 // integers: the largest magnitude accepted
	limitText string
}

// paramFields maps each params key to its field, read once from the
// struct tags of Params (and the DiscreteParams it embeds).
var paramFields = func() map[string]paramField {
	out := map[string]paramField{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(Params{})) {
		key := f.Tag.Get("yaml")
		if key == "" || f.Anonymous {
			continue
		}
		pf := paramField{index: f.Index, typ: f.Type, kinds: strings.Split(f.Tag.Get("kinds"), ","), limit: 1 << 40}
		if l := f.Tag.Get("limit"); l != "" {
			v, err := strconv.ParseFloat(l, 64)
			if err != nil {
				panic(fmt.Sprintf("aggregators: params field %s: limit %q: %v", f.Name, l, err))
			}
			pf.limit, pf.limitText = v, l
		}
		out[key] = pf
	}
	return out
}()

// DecodeParams decodes an aggregate's YAML params mapping into Params,
// accepting the keys of kind only. Every problem is a *FieldError at
// "params.<key>" (or "params.<key>[i]"), wrapping ErrUnknownField or
// ErrWrongType; values are range-checked later, by Config.Check.
func DecodeParams(kind string, n *yaml.Node) (Params, error) {
	var p Params
	if n == nil || n.Kind == 0 {
		return p, nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Tag == "!!null" {
		return p, nil
	}
	if n.Kind != yaml.MappingNode {
		return p, fieldErr("params", ErrWrongType, "want a mapping, got %s", goType(n))
	}
	kindKey := kind
	if !knownKind(kind) {
		kindKey = "other"
	}
	type entry struct {
		key string
		val *yaml.Node
	}
	entries := make([]entry, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		entries = append(entries, entry{n.Content[i].Value, n.Content[i+1]})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	var errs []error
	var zeroFraction bool
	v := reflect.ValueOf(&p).Elem()
	for _, e := range entries {
		path := "params." + e.key
		f, ok := paramFields[e.key]
		if !ok || !slices.Contains(f.kinds, kindKey) {
			errs = append(errs, fieldErr(path, ErrUnknownField, "unknown for kind %s", kind))
			continue
		}
		errs = append(errs, decodeParam(v.FieldByIndex(f.index), f, path, e.val)...)
		if e.key == "interval_epsilon_fraction" && p.IntervalEpsilonFraction == 0 {
			zeroFraction = true
		}
	}
	// an explicit 0 would otherwise be the zero value, i.e. the default:
	// with the logit link the service releases intervals on every window,
	// so 0 is refused rather than silently read as 0.5
	if zeroFraction && (p.Link == "" || p.Link == string(regression.LinkLogit)) && p.Method != string(regression.MethodPSGLD) {
		errs = append(errs, fieldErr("params.interval_epsilon_fraction", ErrInvalid,
			"must be in (0, 0.5] with the logit link (leave it out for the default %v)", regression.DefaultIntervalFraction))
	}
	return p, errors.Join(errs...)
}

// decodeParam sets one field from its YAML value, by the field's type.
func decodeParam(dst reflect.Value, f paramField, path string, n *yaml.Node) []error {
	switch f.typ.Kind() {
	case reflect.String:
		if !isScalar(n, "!!str") {
			return []error{fieldErr(path, ErrWrongType, "want a string, got %s", goType(n))}
		}
		dst.SetString(n.Value)
	case reflect.Float64:
		x, ok := number(n)
		if !ok {
			return []error{fieldErr(path, ErrWrongType, "want a number, got %s", goType(n))}
		}
		dst.SetFloat(x)
	case reflect.Int:
		x, ok := number(n)
		switch {
		case !ok || x != math.Trunc(x):
			return []error{fieldErr(path, ErrWrongType, "want an integer, got %s", n.Value)}
		case math.Abs(x) > f.limit:
			return []error{fieldErr(path, ErrInvalid, "want an integer of at most %s in size, got %s", f.limitText, n.Value)}
		}
		dst.SetInt(int64(x))
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			what := "numbers"
			if f.typ.Elem().Kind() == reflect.String {
				what = "names"
			}
			return []error{fieldErr(path, ErrWrongType, "want a list of %s, got %s", what, goType(n))}
		}
		var errs []error
		out := reflect.MakeSlice(f.typ, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			ep := fmt.Sprintf("%s[%d]", path, i)
			if f.typ.Elem().Kind() == reflect.String {
				if !isScalar(c, "!!str") {
					errs = append(errs, fieldErr(ep, ErrWrongType, "want a name, got %s", goType(c)))
					continue
				}
				out.Index(i).SetString(c.Value)
				continue
			}
			x, ok := number(c)
			if !ok {
				errs = append(errs, fieldErr(ep, ErrWrongType, "want a number, got %s", goType(c)))
			}
			out.Index(i).SetFloat(x)
		}
		dst.Set(out)
		return errs
	default:
		panic(fmt.Sprintf("aggregators: params field of type %v", f.typ))
	}
	return nil
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
