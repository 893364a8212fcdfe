// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/redact"
)

// Map types a MapConfig can name.
const (
	MapTypeSum       = "sum"
	MapTypeGauge     = "gauge"
	MapTypeHistogram = "histogram"
)

// DefaultBinary is the bpftrace executable looked up on PATH when
// Config.Binary is empty.
const DefaultBinary = "bpftrace"

// Defaults of the budget (Config.MaxBufferedBytes, Config.MaxLineBytes).
const (
	DefaultMaxBufferedBytes = 16 << 20
	DefaultMaxLineBytes     = 16 << 10
	// minBufferedLines: the budget holds at least this many lines of
	// MaxLineBytes.
	minBufferedLines = 16
)

// Config selects the bpftrace scripts to run. The zero value runs nothing.
type Config struct {
	// Binary is the bpftrace executable: a name looked up on PATH or a path.
	// Default "bpftrace".
	Binary  string         `mapstructure:"binary"`
	Scripts []ScriptConfig `mapstructure:"scripts"`
	// Env adds environment variables to every bpftrace run, e.g.
	// BPFTRACE_KERNEL_SOURCE / BPFTRACE_KERNEL_BUILD for scripts that include
	// kernel headers on a host whose headers are not in /lib/modules.
	Env map[string]string `mapstructure:"env"`
	// MaxBufferedBytes is the receiver's budget of bytes for what the
	// scripts print: the records being read (one stdout record is cut at
	// this size, or at 16 MiB), partial lines, and the log records and
	// data points batched or being consumed by the pipeline. While it is
	// spent, the scripts' output is not read (bpftrace then counts lost
	// events); a record read meanwhile is cut. Default 16 MiB.
	MaxBufferedBytes int64 `mapstructure:"max_buffered_bytes"`
	// MaxLineBytes cuts every log record's body: a printed line, a stderr
	// line, a record passed on as it is. Default 16 KiB.
	MaxLineBytes int `mapstructure:"max_line_bytes"`
}

// ScriptConfig is one bpftrace program, run as its own bpftrace process.
type ScriptConfig struct {
	// Name identifies the script in the bpftrace.script attribute, in
	// default metric names and in Runner.Counters. Default: the base name of
	// Path without ".bt", or "inline-<i>" where i is the script's index in
	// Config.Scripts.
	Name string `mapstructure:"name"`
	// Path is a .bt file; it is read (and never modified) each time the
	// script starts. Exactly one of Path and Program.
	Path string `mapstructure:"path"`
	// Program is the program text, e.g. a one-liner.
	Program string `mapstructure:"program"`
	// Args are the script's positional parameters, $1, $2, ... ($# is
	// their count; str($1) reads one as a string), passed after the
	// program as bpftrace takes them: bpftrace -f json -- <program> args...
	// (the "--" keeps an argument such as "-1" from being read as an
	// option). Each is a string (quote numbers in YAML: "1"), as on a
	// command line; bpftrace itself refuses a non-numeric one used as an
	// integer ($1 rather than str($1)) when the script starts.
	Args []string `mapstructure:"args"`
	// PullInterval is how often the maps listed in Maps are printed (and so
	// exported): an `interval` probe printing them is appended to the
	// program text bpftrace runs. 0 exports only what the script prints
	// itself, and what bpftrace prints when it exits.
	PullInterval time.Duration `mapstructure:"pull_interval"`
	// Maps lists the maps pulled every PullInterval and exported as
	// metrics, keyed by map name with the "@" (e.g. "@syscall", or "@" for
	// the unnamed map), and sets their names, types and attributes. A map
	// not listed is exported only when the script prints it itself (or
	// bpftrace prints it at exit), with a type from its record (autoMapSpec).
	Maps map[string]MapConfig `mapstructure:"maps"`
	// Redact applies argv redaction to the script's printed lines before
	// they leave: "argv" reads each line as blank-separated words (as
	// execsnoop prints a command line) and replaces the secrets the seq
	// receiver's rules find (credential flags, pass: arguments, URL user
	// info, headers, secret-named KEY=value, shell -c scripts ...); records
	// passed on as they are (parse errors, unmapped types) get the same.
	// "" or "none": lines are exported as printed. Map keys are never
	// redacted.
	Redact string `mapstructure:"redact"`
}

// Values of ScriptConfig.Redact.
const (
	RedactNone = "none"
	RedactArgv = "argv"
)

// MapConfig says how one bpftrace map becomes a metric.
type MapConfig struct {
	// Type is sum, gauge or histogram.
	Type string `mapstructure:"type"`
	// Name is the metric name; default bpftrace.<script>.<map without @>
	// (bpftrace.<script> for the unnamed map "@").
	Name string `mapstructure:"name"`
	// Attributes names the parts of the map key, in order. bpftrace prints
	// a multi-key map's key joined with commas; a part beyond the names
	// given gets the attribute key<i> (i: the part's 0-based position).
	Attributes []string `mapstructure:"attributes"`
	// Monotonic applies to sum only; default true (the script only adds).
	Monotonic   *bool  `mapstructure:"monotonic"`
	Unit        string `mapstructure:"unit"`
	Description string `mapstructure:"description"`
}

// scriptSpec is a validated ScriptConfig with its defaults applied.
type scriptSpec struct {
	name    string
	path    string // "" for an inline program
	program string // inline program text ("" for a path)
	args    []string
	pull    time.Duration
	maps    map[string]*mapSpec
	order   []string // map names, sorted: the order of the appended print()s
	// redactor redacts printed lines (Redact: argv); nil: none.
	redactor *redact.Redactor
}

// budget returns MaxBufferedBytes and MaxLineBytes with their defaults.
func (cfg *Config) budget() (maxBuffered int64, maxLine int) {
	maxBuffered, maxLine = cfg.MaxBufferedBytes, cfg.MaxLineBytes
	if maxBuffered == 0 {
		maxBuffered = DefaultMaxBufferedBytes
	}
	if maxLine == 0 {
		maxLine = DefaultMaxLineBytes
	}
	return maxBuffered, maxLine
}

// mapSpec is a validated MapConfig with its defaults applied.
type mapSpec struct {
	mapName     string // "@syscall"
	typ         string
	metricName  string
	attributes  []string
	monotonic   bool
	unit        string
	description string
	// auto: no MapConfig names the map; the script printed it (autoMapSpec).
	auto bool
}

// argvRedactor is the built-in rules, shared by the scripts that redact.
var argvRedactor = func() *redact.Redactor {
	r, err := redact.New(redact.Config{})
	if err != nil {
		panic(err) // no patterns: cannot fail
	}
	return r
}()

var mapNameRE = regexp.MustCompile(`^@([A-Za-z_][A-Za-z0-9_]*)?$`)

// Validate checks the configuration; each error names the field and the fix.
// For a script given by path it reads the file, to check that the listed
// maps exist in it.
func (cfg *Config) Validate() error {
	_, err := cfg.resolve(true)
	return err
}

// resolve validates cfg and applies defaults. checkText reads each script's
// text to check that its listed maps are used by it.
func (cfg *Config) resolve(checkText bool) ([]*scriptSpec, error) {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if strings.TrimSpace(cfg.Binary) != cfg.Binary {
		fail("binary: %q has leading or trailing spaces; remove them", cfg.Binary)
	}
	maxBuf, maxLine := cfg.budget()
	switch {
	case cfg.MaxBufferedBytes < 0:
		fail("max_buffered_bytes: %d is negative; use 0 (the default, %d) or a positive number of bytes", cfg.MaxBufferedBytes, DefaultMaxBufferedBytes)
	case cfg.MaxLineBytes < 0:
		fail("max_line_bytes: %d is negative; use 0 (the default, %d) or a positive number of bytes", cfg.MaxLineBytes, DefaultMaxLineBytes)
	case cfg.MaxLineBytes > 0 && cfg.MaxLineBytes < 64:
		fail("max_line_bytes: %d is too small to hold a line; use at least 64", cfg.MaxLineBytes)
	case maxBuf < int64(maxLine)*minBufferedLines:
		fail("max_buffered_bytes: %d holds fewer than %d lines of max_line_bytes (%d); raise max_buffered_bytes to at least %d or lower max_line_bytes",
			maxBuf, minBufferedLines, maxLine, int64(maxLine)*minBufferedLines)
	}
	specs := make([]*scriptSpec, 0, len(cfg.Scripts))
	names := map[string]int{}
	for i, sc := range cfg.Scripts {
		field := fmt.Sprintf("scripts[%d]", i)
		spec := &scriptSpec{
			name:    sc.Name,
			path:    sc.Path,
			program: sc.Program,
			args:    slices.Clone(sc.Args),
			pull:    sc.PullInterval,
			maps:    map[string]*mapSpec{},
		}
		switch {
		case sc.Path == "" && strings.TrimSpace(sc.Program) == "":
			fail("%s: neither path nor program is set; set path to a .bt file or program to the program text", field)
		case sc.Path != "" && sc.Program != "":
			fail("%s: both path and program are set; keep exactly one of them", field)
		}
		if spec.name == "" {
			if sc.Path != "" {
				spec.name = strings.TrimSuffix(filepath.Base(sc.Path), ".bt")
			} else {
				spec.name = fmt.Sprintf("inline-%d", i)
			}
		}
		if strings.TrimSpace(spec.name) == "" || strings.ContainsAny(spec.name, "/\x00\n") {
			fail("%s.name: %q is not a usable name; set name to a non-empty name without '/' or newlines", field, spec.name)
		}
		if j, dup := names[spec.name]; dup {
			fail("%s.name: %q is already the name of scripts[%d]; give each script a distinct name", field, spec.name, j)
		} else {
			names[spec.name] = i
		}
		switch sc.Redact {
		case "", RedactNone:
		case RedactArgv:
			spec.redactor = argvRedactor
		default:
			fail("%s.redact: %q is not a redaction; use argv (redact secrets in printed command lines, as execsnoop prints them) or none", field, sc.Redact)
		}
		for j, a := range sc.Args {
			if strings.ContainsRune(a, 0) {
				fail("%s.args[%d]: %q contains a NUL byte, which cannot be passed on a command line; remove it", field, j, a)
			}
		}
		if sc.PullInterval < 0 {
			fail("%s.pull_interval: %s is negative; use 0 (no pulling) or a positive duration such as 10s", field, sc.PullInterval)
		} else if sc.PullInterval > 0 && sc.PullInterval < time.Millisecond {
			fail("%s.pull_interval: %s is below bpftrace's 1ms interval resolution; use at least 1ms", field, sc.PullInterval)
		}
		if sc.PullInterval > 0 && len(sc.Maps) == 0 {
			fail("%s.pull_interval: set, but maps is empty, so there is nothing to pull; list the maps to export under maps or remove pull_interval", field)
		}

		metricNames := map[string]string{}
		for _, mapName := range slices.Sorted(maps.Keys(sc.Maps)) {
			mc := sc.Maps[mapName]
			mfield := fmt.Sprintf("%s.maps[%q]", field, mapName)
			if !mapNameRE.MatchString(mapName) {
				fail("%s: %q is not a bpftrace map name; write the map as in the script, with its @ (e.g. \"@syscall\")", mfield, mapName)
				continue
			}
			ms := &mapSpec{
				mapName:     mapName,
				typ:         mc.Type,
				metricName:  mc.Name,
				attributes:  mc.Attributes,
				monotonic:   true,
				unit:        mc.Unit,
				description: mc.Description,
			}
			switch mc.Type {
			case MapTypeSum, MapTypeGauge, MapTypeHistogram:
			case "":
				fail("%s.type: missing; set it to sum (count/sum maps), gauge (min/max/avg/value maps) or histogram (hist/lhist maps)", mfield)
			default:
				fail("%s.type: %q is not a map type; use sum, gauge or histogram", mfield, mc.Type)
			}
			if mc.Monotonic != nil {
				if mc.Type != MapTypeSum {
					fail("%s.monotonic: applies to type sum only; remove it", mfield)
				} else {
					ms.monotonic = *mc.Monotonic
				}
			}
			if ms.metricName == "" {
				ms.metricName = defaultMetricName(spec.name, mapName)
			}
			if other, dup := metricNames[ms.metricName]; dup {
				fail("%s.name: metric name %q is also used by maps[%q]; give each map its own metric name", mfield, ms.metricName, other)
			}
			metricNames[ms.metricName] = mapName
			seen := map[string]bool{}
			for k, a := range mc.Attributes {
				switch {
				case strings.TrimSpace(a) == "":
					fail("%s.attributes[%d]: empty; name every key part", mfield, k)
				case a == AttrScript:
					fail("%s.attributes[%d]: %q is set on every point already; choose another name", mfield, k, a)
				case seen[a]:
					fail("%s.attributes[%d]: %q is listed twice; give each key part its own name", mfield, k, a)
				}
				seen[a] = true
			}
			spec.maps[mapName] = ms
			spec.order = append(spec.order, mapName)
		}

		if checkText && len(spec.order) > 0 && (sc.Path == "") != (sc.Program == "") {
			text, err := spec.text()
			if err != nil {
				fail("%s.path: %v; fix the path or make the file readable", field, err)
			} else if err := checkMapsUsed(text, spec.order); err != nil {
				fail("%s.maps: %v", field, err)
			}
		} else if checkText && sc.Path != "" && sc.Program == "" {
			if _, err := os.Stat(sc.Path); err != nil {
				fail("%s.path: %v; fix the path", field, err)
			}
		}
		specs = append(specs, spec)
	}
	return specs, errors.Join(errs...)
}
