// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/redact"
)

// Redact replaces the secrets of ev's argv, once for the model and the log
// records alike: ev.Args becomes the redacted argv and ev.Redacted the
// number of values replaced (r nil: none). The receiver calls it on every
// exec and snapshot event before Apply or AddRunning, whatever the model
// then does with the event (an evicted process's exec is still mapped to a
// log record); neither the model nor the mapper redacts.
func Redact(r *redact.Redactor, ev *event.Event) {
	if ev.Type != event.Exec && ev.Type != event.Snapshot {
		return
	}
	if ev.ArgsTruncated() { // the last argument may end inside a secret
		ev.Args, ev.Redacted = r.CutArgs(ev.Args)
		return
	}
	ev.Args, ev.Redacted = r.Args(ev.Args)
}
