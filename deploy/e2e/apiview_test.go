//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
)

// checkAgainstAPI holds readyline's timeline of a pod start to what the
// API server said of the pod when the start ended (pod, as the test's own
// watch saw it then): each condition True there is in the timeline with
// the same lastTransitionTime; each container the kubelet created is
// there, by container id, with the runtime's start and finish times the
// API shows to the second, its exit code and reason. Kubernetes' own view
// is the reference the timeline must agree with.
func checkAgainstAPI(t *testing.T, tl *correlator.Timeline, pod *corev1.Pod) {
	t.Helper()
	if tl.Pod.UID != string(pod.UID) {
		t.Fatalf("readyline's timeline is of uid %s, the pod's is %s", tl.Pod.UID, pod.UID)
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		var got *correlator.ConditionTransition
		for i := range tl.Conditions {
			if tl.Conditions[i].Type == string(c.Type) {
				got = &tl.Conditions[i]
			}
		}
		switch {
		case got == nil:
			t.Errorf("condition %s is True in the API (since %s), not in readyline's timeline", c.Type, c.LastTransitionTime.Format(time.TimeOnly))
		case !got.LastTransitionTime.Equal(c.LastTransitionTime.Time):
			t.Errorf("condition %s: lastTransitionTime %v in readyline's timeline, %v in the API", c.Type, got.LastTransitionTime, c.LastTransitionTime.Time)
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if cs.ContainerID == "" {
			continue // not created (yet)
		}
		att := attemptOf(tl, cs.Name, cs.ContainerID)
		if att == nil {
			t.Errorf("container %s (%s) is in the API, not in readyline's timeline", cs.Name, cs.ContainerID)
			continue
		}
		sameSecond := func(what string, ours time.Time, api time.Time) {
			t.Helper()
			if !ours.Truncate(time.Second).Equal(api) {
				t.Errorf("container %s %s at %v by readyline, %v by the API (to the second)", cs.Name, what, ours, api)
			}
		}
		switch s := cs.State; {
		case s.Running != nil:
			sameSecond("started", att.Started, s.Running.StartedAt.Time)
		case s.Terminated != nil:
			sameSecond("started", att.Started, s.Terminated.StartedAt.Time)
			sameSecond("finished", att.Finished, s.Terminated.FinishedAt.Time)
			if att.ExitCode == nil || *att.ExitCode != int(s.Terminated.ExitCode) || att.Reason != s.Terminated.Reason {
				t.Errorf("container %s ended with %s %s by readyline, %d %s by the API", cs.Name, exitCode(att.ExitCode), att.Reason,
					s.Terminated.ExitCode, s.Terminated.Reason)
			}
		}
	}
}

// attemptOf returns the attempt of container name with the API's id
// ("containerd://<id>") in tl, or nil.
func attemptOf(tl *correlator.Timeline, name, apiID string) *correlator.ContainerAttempt {
	id := apiID
	if i := strings.Index(apiID, "://"); i >= 0 {
		id = apiID[i+3:]
	}
	for i := range tl.Containers {
		c := &tl.Containers[i]
		if c.Name != name {
			continue
		}
		for j := range c.Attempts {
			if c.Attempts[j].ContainerID == id {
				return &c.Attempts[j]
			}
		}
	}
	return nil
}

// containerOf returns container name of tl, or nil.
func containerOf(tl *correlator.Timeline, name string) *correlator.Container {
	for i := range tl.Containers {
		if tl.Containers[i].Name == name {
			return &tl.Containers[i]
		}
	}
	return nil
}

func exitCode(p *int) string {
	if p == nil {
		return "no exit code"
	}
	return "exit " + strconv.Itoa(*p)
}
