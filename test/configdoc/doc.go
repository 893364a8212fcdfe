// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package configdoc keeps each receiver's README configuration table true to
// its Config struct. Test code only: nothing outside a _test.go file imports
// it.
//
// The table sits between <!-- config:start --> and <!-- config:end --> in
// the README, one row per setting: | `path` | `default` | meaning |. The path
// is the key as the YAML nests it, `::` between levels as the collector
// writes it (traces::max_memory); a list of mappings adds [] to its key
// (scripts[]::path), a mapping of mappings ::<name> (scripts[]::maps::<name>::type).
// The default is the factory's default config, written as a YAML value
// (`65536`, `5m`, `[fork, exec, exit]`, `""`, `null`).
//
//   - fields.go: Fields walks a Config by reflection (mapstructure tags,
//     squashed and nested structs, durations, lists, maps, pointers) into
//     the rows the table must have, with their defaults.
//   - readme.go: CheckREADME, the test each receiver runs: it fails on a
//     setting missing from the table, a row whose setting does not exist, a
//     default that differs, rows out of the struct's order, and an empty
//     meaning; with -update-readme it rewrites the path and default columns
//     (keeping the meanings; a new row's meaning is left for a person to
//     write). CheckExamples unmarshals every YAML example of the README that
//     configures the receiver into its Config, so that an example naming a
//     setting that does not exist, or giving it a value of the wrong type,
//     fails too.
//
// The meanings are written in the README, not taken from the structs' doc
// comments: those are written for the code's readers (they name Go
// identifiers and the code's own defaults), two of the four Configs embed
// structs of internal packages and one (ebpf_exporter's scraperhelper
// settings) a struct of the collector's, and a user's meaning carries ranges,
// units and links that a doc comment does not. The names, the order and the
// defaults, which can drift silently, are what the test checks.
package configdoc
