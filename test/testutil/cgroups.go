// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// KubepodsParent returns a random pod uid and the cgroup parent
// /kubepods/besteffort/pod<uid>: a container started under it (podman
// --cgroup-parent) is, to the seq receiver, a Kubernetes pod's container.
// The cgroup directories the runtime leaves under it are removed at the
// test's end.
func KubepodsParent(t testing.TB) (uid, parent string) {
	t.Helper()
	var u [16]byte
	for i := range u {
		u[i] = byte(rand.Uint32())
	}
	uid = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	return uid, KubepodsParentOf(t, uid)
}

// KubepodsParentOf is KubepodsParent for a given pod uid (a pod created
// through a Kubernetes API server): the cgroup parent
// /kubepods/besteffort/pod<uid>, removed at the test's end.
func KubepodsParentOf(t testing.TB, uid string) string {
	t.Helper()
	parent := "/kubepods/besteffort/pod" + uid
	t.Cleanup(func() { removeCgroups(t, strings.TrimPrefix(parent, "/")) })
	return parent
}

// removeCgroups removes the cgroup directories under rel (relative to each
// hierarchy), deepest first, in the v2 and every v1 hierarchy.
func removeCgroups(t testing.TB, rel string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, root := range roots {
		top := filepath.Join(root, rel)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				t.Logf("cgroup left behind: %s: %v", d, err)
			}
		}
	}
}
