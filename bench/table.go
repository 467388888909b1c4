package bench

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// maxTableRows caps the rows printed for a list (soak samples, backlog
// samples): longer lists are thinned evenly, first and last kept; --json
// has them all.
const maxTableRows = 20

// WriteTable writes v, a benchmark or evaluation result (a struct or a
// pointer to one), for people: what `loci bench` and `loci eval` print
// without --json. The JSON names of the fields label it, so the table and
// the JSON read the same. Plain fields become "name  value" lines; fields
// that are structs of plain fields, lists of such structs and maps to them
// become tables with a column per field, aligned with text/tabwriter;
// other structs become indented sections.
func WriteTable(w io.Writer, title string, v any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if title != "" {
		fmt.Fprintln(tw, title)
	}
	writeStruct(tw, reflect.ValueOf(v), "  ")
	return tw.Flush()
}

// field is a struct field to print, with its JSON name.
type field struct {
	name string
	v    reflect.Value
}

// fields returns the printable fields of struct value v in order: exported,
// not `json:"-"`, not empty when omitempty, embedded structs flattened.
func fields(v reflect.Value) []field {
	var out []field
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		fv := v.Field(i)
		if sf.Anonymous && indirect(fv).Kind() == reflect.Struct && tag == "" {
			if fv = indirect(fv); fv.IsValid() {
				out = append(out, fields(fv)...)
			}
			continue
		}
		if strings.Contains(opts, "omitempty") && fv.IsZero() {
			continue
		}
		out = append(out, field{name, fv})
	}
	return out
}

// indirect follows pointers and interfaces; a nil one gives the zero Value.
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// isScalar reports whether v prints as one cell: a number, string or bool,
// a list of them, or a map to them.
func isScalar(v reflect.Value) bool {
	v = indirect(v)
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Struct:
		return false
	case reflect.Slice, reflect.Array:
		return isScalarType(v.Type().Elem())
	case reflect.Map:
		return isScalarType(v.Type().Elem())
	}
	return true
}

func isScalarType(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map, reflect.Interface:
		return false
	}
	return true
}

// isRecordType reports whether t is a struct of scalar fields only: a row.
func isRecordType(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.IsExported() && !isScalarType(sf.Type) && !(sf.Type.Kind() == reflect.Map && isScalarType(sf.Type.Elem())) {
			if sf.Anonymous && isRecordType(sf.Type) {
				continue
			}
			return false
		}
	}
	return true
}

// writeStruct writes struct v: its scalar fields first, then its tables and
// sections in field order.
func writeStruct(w io.Writer, v reflect.Value, indent string) {
	v = indirect(v)
	if !v.IsValid() || v.Kind() != reflect.Struct {
		fmt.Fprintf(w, "%s%s\n", indent, cell(v))
		return
	}
	fs := fields(v)
	for _, f := range fs {
		if isScalar(f.v) {
			fmt.Fprintf(w, "%s%s\t%s\n", indent, f.name, cell(f.v))
		}
	}
	// Struct fields of one record type in a row make one table, a row each.
	for i := 0; i < len(fs); {
		f := fs[i]
		fv := indirect(f.v)
		switch {
		case isScalar(f.v):
			i++
		case fv.Kind() == reflect.Struct && isRecordType(fv.Type()):
			j := i + 1
			for j < len(fs) && indirect(fs[j].v).IsValid() && indirect(fs[j].v).Type() == fv.Type() {
				j++
			}
			var names []string
			var rows []reflect.Value
			for _, g := range fs[i:j] {
				names, rows = append(names, g.name), append(rows, indirect(g.v))
			}
			fmt.Fprintln(w)
			writeRecords(w, indent, "", names, rows)
			i = j
		case (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Array) && isRecordType(fv.Type().Elem()):
			var rows []reflect.Value
			for k := range fv.Len() {
				rows = append(rows, indirect(fv.Index(k)))
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "%s%s:\n", indent, f.name)
			writeRecords(w, indent+"  ", "", nil, rows)
			i++
		case fv.Kind() == reflect.Map && isRecordType(fv.Type().Elem()):
			keys := fv.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(cell(a), cell(b)) })
			var names []string
			var rows []reflect.Value
			for _, k := range keys {
				names, rows = append(names, cell(k)), append(rows, indirect(fv.MapIndex(k)))
			}
			fmt.Fprintln(w)
			writeRecords(w, indent, f.name, names, rows)
			i++
		default:
			fmt.Fprintln(w)
			fmt.Fprintf(w, "%s%s:\n", indent, f.name)
			if fv.Kind() == reflect.Slice || fv.Kind() == reflect.Array {
				for k := range fv.Len() {
					writeStruct(w, fv.Index(k), indent+"  ")
				}
			} else {
				writeStruct(w, fv, indent+"  ")
			}
			i++
		}
	}
}

// writeRecords writes rows of one record type as a table: a header of the
// field names, then a row each, led by its name when names is set (under
// the heading corner). Long lists are thinned to maxTableRows.
func writeRecords(w io.Writer, indent, corner string, names []string, rows []reflect.Value) {
	var valid reflect.Value
	for _, r := range rows {
		if r.IsValid() {
			valid = r
			break
		}
	}
	if !valid.IsValid() {
		return
	}
	keep := thin(len(rows))
	header := []string{}
	if names != nil {
		header = append(header, corner)
	}
	for _, f := range fields(valid) {
		header = append(header, f.name)
	}
	fmt.Fprintf(w, "%s%s\n", indent, strings.Join(header, "\t"))
	for _, i := range keep {
		var cells []string
		if names != nil {
			cells = append(cells, names[i])
		}
		if rows[i].IsValid() {
			for _, f := range fields(rows[i]) {
				cells = append(cells, cell(f.v))
			}
		}
		fmt.Fprintf(w, "%s%s\n", indent, strings.Join(cells, "\t"))
	}
	if len(keep) < len(rows) {
		fmt.Fprintf(w, "%s(%d of %d rows; --json for all)\n", indent, len(keep), len(rows))
	}
}

// thin returns the indexes of up to maxTableRows of n rows, evenly spread,
// the first and the last included.
func thin(n int) []int {
	var out []int
	if n <= maxTableRows {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	for k := range maxTableRows {
		out = append(out, k*(n-1)/(maxTableRows-1))
	}
	return out
}

// cell formats a scalar, a list of them (comma-separated) or a map to them
// (key=value, keys sorted).
func cell(v reflect.Value) string {
	v = indirect(v)
	if !v.IsValid() {
		return "-"
	}
	switch v.Kind() {
	case reflect.String:
		if v.Len() == 0 {
			return "-"
		}
		return strings.NewReplacer("\t", " ", "\n", " ").Replace(v.String()) // one cell, one line
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return formatFloat(v.Float())
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return "-"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = cell(v.Index(i))
		}
		return strings.Join(parts, ", ")
	case reflect.Map:
		if v.Len() == 0 {
			return "-"
		}
		var parts []string
		for _, k := range v.MapKeys() {
			parts = append(parts, cell(k)+"="+cell(v.MapIndex(k)))
		}
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(v.Interface())
}

// formatFloat shows about four significant digits, without exponents for
// the magnitudes results have.
func formatFloat(f float64) string {
	a := math.Abs(f)
	switch {
	case f == 0 || math.IsNaN(f) || math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'f', -1, 64)
	case a >= 1000:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(f, 'f', 2, 64)
	case a >= 0.001:
		return strconv.FormatFloat(f, 'f', 4, 64)
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}
