// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package event

import "strconv"

// linuxSignals holds the names of the Linux signal numbers (asm-generic, as on
// x86 and arm64), so that names are right whatever GOOS decodes them.
var linuxSignals = [...]string{
	1:  "SIGHUP",
	2:  "SIGINT",
	3:  "SIGQUIT",
	4:  "SIGILL",
	5:  "SIGTRAP",
	6:  "SIGABRT",
	7:  "SIGBUS",
	8:  "SIGFPE",
	9:  "SIGKILL",
	10: "SIGUSR1",
	11: "SIGSEGV",
	12: "SIGUSR2",
	13: "SIGPIPE",
	14: "SIGALRM",
	15: "SIGTERM",
	16: "SIGSTKFLT",
	17: "SIGCHLD",
	18: "SIGCONT",
	19: "SIGSTOP",
	20: "SIGTSTP",
	21: "SIGTTIN",
	22: "SIGTTOU",
	23: "SIGURG",
	24: "SIGXCPU",
	25: "SIGXFSZ",
	26: "SIGVTALRM",
	27: "SIGPROF",
	28: "SIGWINCH",
	29: "SIGIO",
	30: "SIGPWR",
	31: "SIGSYS",
}

// SignalName returns the name of Linux signal sig, e.g. "SIGKILL", or
// "SIG<number>" for a number without one (real-time signals included).
func SignalName(sig int) string {
	if sig > 0 && sig < len(linuxSignals) {
		return linuxSignals[sig]
	}
	return "SIG" + strconv.Itoa(sig)
}
