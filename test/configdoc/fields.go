// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package configdoc

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Field is one row of the table: a setting's path and its default.
type Field struct {
	// Path is the key as the YAML nests it: traces::max_memory,
	// scripts[]::maps::<name>::type.
	Path string
	// Default is the default config's value, as a YAML value.
	Default string
}

// Fields returns every setting of cfg (a pointer to a Config, or a Config),
// in the order of the struct's fields, with its value in cfg as the default.
// A list of structs or a map of structs is a row of its own (its default)
// followed by the rows of its element, whose defaults are the element's zero
// value. An exported field without a mapstructure tag is an error: the
// collector would read it under another name than the table's.
func Fields(cfg any) ([]Field, error) {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("configdoc: %T is not a struct", cfg)
	}
	var out []Field
	if err := walk("", v, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func walk(prefix string, v reflect.Value, out *[]Field) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if slices.Contains(strings.Split(opts, ","), "squash") {
			if fv.Kind() != reflect.Struct {
				return fmt.Errorf("configdoc: %s.%s is squashed but not a struct", t, f.Name)
			}
			if err := walk(prefix, fv, out); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			return fmt.Errorf("configdoc: %s.%s has no mapstructure tag", t, f.Name)
		}
		path := name
		if prefix != "" {
			path = prefix + "::" + name
		}
		if err := field(path, fv, out); err != nil {
			return err
		}
	}
	return nil
}

// field adds the rows of one setting: a leaf's own, or a nested struct's
// settings, or a list's or map's row and then its element's settings.
func field(path string, v reflect.Value, out *[]Field) error {
	t := v.Type()
	switch {
	case leaf(t):
		*out = append(*out, Field{Path: path, Default: yamlValue(v)})
		return nil
	case t.Kind() == reflect.Struct:
		return walk(path, v, out)
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return walk(path, reflect.New(t.Elem()).Elem(), out)
		}
		return walk(path, v.Elem(), out)
	case t.Kind() == reflect.Slice:
		*out = append(*out, Field{Path: path, Default: yamlValue(v)})
		return walk(path+"[]", reflect.New(t.Elem()).Elem(), out)
	default: // a map of structs
		*out = append(*out, Field{Path: path, Default: yamlValue(v)})
		return walk(path+"::<name>", reflect.New(t.Elem()).Elem(), out)
	}
}

var (
	durationType      = reflect.TypeFor[time.Duration]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// leaf reports whether a setting of type t is one row: anything but a
// struct, a pointer to one, or a list or map of them (a duration, or a type
// that writes itself as text, is a leaf whatever its kind).
func leaf(t reflect.Type) bool {
	if t == durationType || t.Implements(textMarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return !leafElem(t.Elem())
	}
	return true
}

// leafElem reports whether e, the element of a pointer, list or map, is a
// struct whose settings get rows of their own.
func leafElem(e reflect.Type) bool {
	return e.Kind() == reflect.Struct && e != durationType && !e.Implements(textMarshalerType)
}

// yamlValue writes v as a YAML flow value: 65536, 0.75, true, 5m,
// [fork, exec, exit], {KEY: value}, "" for an empty string, null for a nil
// pointer.
func yamlValue(v reflect.Value) string {
	if v.Type() == durationType {
		return duration(time.Duration(v.Int()))
	}
	if v.Type().Implements(textMarshalerType) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err == nil {
			return yamlString(string(b))
		}
	}
	switch v.Kind() {
	case reflect.String:
		return yamlString(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "null"
		}
		return yamlValue(v.Elem())
	case reflect.Slice, reflect.Array:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = yamlValue(v.Index(i))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case reflect.Map:
		items := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			items = append(items, yamlValue(it.Key())+": "+yamlValue(it.Value()))
		}
		slices.Sort(items)
		return "{" + strings.Join(items, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// duration writes d as Go's duration syntax without zero units at its end
// (5m, not 5m0s), which the collector reads back as the same duration.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// yamlString quotes s where YAML would read it as something else than this
// string in a flow collection: empty, a number, a bool or null, or holding
// a character that means something there.
func yamlString(s string) string {
	plain := s != "" && strings.TrimSpace(s) == s && !strings.ContainsAny(s, ":#,[]{}\"'&*!|>%@`") &&
		!slices.Contains([]string{"true", "false", "null", "~", "yes", "no", "on", "off"}, strings.ToLower(s))
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		plain = false
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}
