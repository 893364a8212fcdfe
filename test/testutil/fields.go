// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"reflect"
	"slices"
	"testing"
)

// AssertEveryFieldSet fails for each exported field of the struct v that
// holds its zero value, but those named in except: a test that sets every
// configuration field to a value that is not its default calls it, so that
// a field added later without being set (and so without being checked to
// reach the code it configures) fails the test. Embedded structs count as
// their fields; slices, maps and other structs are not walked (pass their
// elements too).
func AssertEveryFieldSet(t testing.TB, v any, except ...string) {
	t.Helper()
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		t.Fatalf("AssertEveryFieldSet: %T is not a struct", v)
	}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		switch {
		case !f.IsExported():
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			AssertEveryFieldSet(t, rv.Field(i).Interface(), except...)
		case slices.Contains(except, f.Name):
		case rv.Field(i).IsZero():
			t.Errorf("%s.%s is not set: set it to a value that is not its default, and check that it arrives", rv.Type(), f.Name)
		}
	}
}
