package correlator

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// Static pods. The kubelet reads a static pod from a manifest file, not from
// the API, and gives it a UID of its own: the hex FNV-128a hash of the
// manifest and its source, 32 hex digits and not a UUID
// (pkg/kubelet/config/common.go applyDefaults, which also stores it in the
// kubernetes.io/config.hash annotation). Everything on the node carries that
// hash: the pod cgroup pod<hash>, the CRI label io.kubernetes.pod.uid.
//
// What the API shows is a mirror pod the kubelet creates for it: a copy with
// the annotation kubernetes.io/config.mirror set to the same hash
// (pkg/kubelet/pod/mirror_client.go CreateMirrorPod; IsMirrorPodOf in
// pod_manager.go matches the two by that annotation) and a metadata.uid the
// API server chose. The mirror is created in SyncPod only once the pod is
// being synced (kubelet.go tryReconcileMirrorPods), after the API server
// answers and the node is registered, so it may appear long after the static
// pod started (control-plane pods start before the API server exists; the
// kubelet retries every 1-1.5 min, see fastStaticPodsRegistration). The
// status manager skips a static pod's status until its mirror exists
// (status_manager.go syncBatch: "Static pod does not have a corresponding
// mirror pod; skipping"), so a mirror's first status can already be Ready.
//
// The correlator therefore joins a mirror pod with the node facts keyed by
// its hash: the trace id is the mirror pod's UID (what kubectl shows) and the
// node facts that arrived before the mirror wait for it (as orphans) up to
// the start timeout, not just OrphanTTL.

// configHashAnnotation is the kubelet's kubetypes.ConfigHashAnnotationKey
// (pkg/kubelet/types/pod_update.go), the static pod's node-side UID.
const configHashAnnotation = "kubernetes.io/config.hash"

// mirrorHash returns the config hash a mirror pod mirrors, and false for
// any other pod. A pod is a mirror pod when it has the
// kubernetes.io/config.mirror annotation (kubetypes.IsMirrorPod), whose value
// is the static pod's config hash (CreateMirrorPod copies it from
// kubernetes.io/config.hash, the fallback here when it is empty).
func mirrorHash(pod *corev1.Pod) (string, bool) {
	h, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	if !ok {
		return "", false
	}
	if h == "" {
		h = pod.Annotations[configHashAnnotation]
	}
	return h, h != ""
}

// looksLikeConfigHash reports whether a node-side pod UID has the form of a
// kubelet config hash (32 hex digits, pkg/kubelet/config/common.go) rather
// than an API server UID (a UUID with dashes). A manifest that sets its own
// metadata.uid keeps it (applyDefaults only hashes when the UID is empty);
// such a pod's orphans wait only OrphanTTL for their mirror.
func looksLikeConfigHash(uid string) bool {
	if len(uid) != 32 {
		return false
	}
	for _, c := range uid {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sightOf is when readyline observed ev happen: a CRI call from its start
// when the kernel saw it begin, any other event at its time.
func sightOf(ev event.Event) time.Time {
	if c, ok := ev.(*event.CRICall); ok && !c.Time.IsZero() {
		return c.Time
	}
	return ev.When()
}

// sawStartOnNode reports whether node facts show a static pod's start from
// its beginning: readyline saw something of the pod no later than the
// sandbox's creation (the RunPodSandbox call it saw begin, or a runtime
// report of the sandbox that followed its creation closely). After a daemon
// restart the runtime reports sandboxes created long before, and the kernel
// sees no start at all.
func sawStartOnNode(events []event.Event) bool {
	var sight, created time.Time
	for _, ev := range events {
		sight = earliest(sight, sightOf(ev))
		switch e := ev.(type) {
		case *event.CRICall:
			if e.Method == event.CRIRunPodSandbox {
				created = earliest(created, e.Time)
			}
		case *event.ContainerInfo:
			if e.Sandbox {
				created = earliest(created, e.CreatedAt)
			}
		}
	}
	return !created.IsZero() && !sight.After(created.Add(sightSlack))
}
