// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package cgroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Paths anyone but root can make: a victim pod's or container's layout
// recreated under a subtree delegated to a user (systemd user sessions,
// Delegate=yes), under another container's cgroup (a container with a
// writable cgroup namespace), or under any prefix that is not a runtime's
// root. None may name the victim's container or pod.
func TestParseSpoofed(t *testing.T) {
	victims := []string{
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope",
		"/kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + id1 + ".scope",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice",
		"/kubepods/burstable/pod" + uid + "/" + id1,
		"/kubepods/pod" + uid + "/crio-" + id1,
		"/kubepods/besteffort/pod" + uid + "/libpod-" + id1,
		"/system.slice/docker-" + id1 + ".scope",
		"/docker/" + id1,
		"/machine.slice/libpod-" + id1 + ".scope",
		"/libpod_parent/libpod-" + id1,
		"/default/" + id1,
	}
	prefixes := []string{
		"/user.slice/user-1000.slice/user@1000.service",
		"/user.slice/user-1000.slice/user@1000.service/app.slice",
		"/user.slice/user-1000.slice/user@1000.service/user.slice/podman.scope",
		"/user.slice/user-1000.slice/session-3.scope",
		"/system.slice/myservice.service",
		"/system.slice/docker-" + id2 + ".scope",                                        // inside another docker container
		"/kubepods/besteffort/pod" + "11111111-2222-3333-4444-555555555555" + "/" + id2, // inside another pod's container
		"/kubepods.slice/kubepods-pod11111111_2222_3333_4444_555555555555.slice/cri-containerd-" + id2 + ".scope",
		"/..",
		"/../../..",
		"/foo",
	}
	for _, p := range prefixes {
		for _, v := range victims {
			path := p + v
			t.Run(path, func(t *testing.T) {
				got := Parse(path)
				assert.NotEqual(t, id1, got.ContainerID, "the victim's container id")
				assert.NotEqual(t, uid, got.PodUID, "the victim's pod uid")
				assert.NotEmpty(t, got.Untrusted, "counted as untrusted")
			})
		}
	}
}
