package exporter

import (
	"time"

	cri "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
)

// The timelines below are written by hand after the seed's recorded kind runs
// (seed 000 §5.4 lifecycle-demo, seed 003 init failure with restartPolicy
// Never), with the sub-second detail the kernel and the runtime add.

var t0 = time.Date(2026, 10, 18, 1, 51, 18, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func intp(v int) *int { return &v }

const lifecycleUID = "7c0e4f3a-9b1d-4e2f-8a6b-3c5d7e9f1a2b"

// lifecycleDemo is the seed's lifecycle-demo: init-regular (sleep 5), the
// init-sidecar gated by an exec startupProbe (initialDelaySeconds 5), nginx
// with httpGet startup and readiness probes; Ready after 27.1 s.
func lifecycleDemo() *correlator.Timeline {
	return withBreakdown(&correlator.Timeline{
		Pod:     correlator.PodRef{UID: lifecycleUID, Namespace: "default", Name: "lifecycle-demo", Node: "readyline-node"},
		Start:   t0,
		End:     at(27097),
		Outcome: correlator.OutcomeReady,
		Phases: []correlator.Phase{
			{Name: correlator.PhaseSchedule, Start: at(0), End: at(45), Source: "api"},
			{Name: correlator.PhaseWaitSandbox, Start: at(52), End: at(310), Source: "api"},
			{Name: correlator.PhaseSandbox, Start: at(310), End: at(742), Source: "runtime"},
			{Name: correlator.PhaseInit, Start: at(4912), End: at(15240), Source: "kernel"},
			{Name: correlator.PhaseContainers, Start: at(21880), End: at(27090), Source: "api"},
		},
		Sandbox: &correlator.Sandbox{
			ID: "5f1e2d3c4b5a", Created: at(310), PauseStart: at(598), Ready: at(742), PodIP: "10.88.0.7",
		},
		Containers: []correlator.Container{
			{
				Name: "init-regular", Kind: correlator.KindInit, Index: 0, Image: "localhost/busybox:local",
				Attempts: []correlator.ContainerAttempt{{
					Attempt: 0, ContainerID: "a1b2c3d4e5f6",
					Created: at(4912), Started: at(5030),
					Process: &correlator.Process{
						PID: 4242, Filename: "/bin/sh", Argv: []string{"sh", "-c", "sleep 5"},
						Exec: at(5021), Exit: at(10034), ExitCode: intp(0),
					},
					Finished: at(10036), ExitCode: intp(0),
					NextCreated: at(10118),
				}},
			},
			{
				Name: "init-sidecar", Kind: correlator.KindSidecar, Index: 1, Image: "localhost/busybox:local",
				Attempts: []correlator.ContainerAttempt{{
					Attempt: 0, ContainerID: "b2c3d4e5f6a7",
					Created: at(10118), Started: at(10201),
					Process: &correlator.Process{
						PID: 4310, Filename: "/bin/sh",
						Argv: []string{"sh", "-c", "touch /tmp/ready; while true; do sleep 1; done"},
						Exec: at(10195),
					},
					StartedObserved: at(15300), ReadyObserved: at(15302),
					Probes: []correlator.ProbeAttempt{
						{Kind: correlator.ProbeStartup, Handler: "exec", Start: at(15210), End: at(15240), Result: correlator.ProbeSuccess, ExitCode: intp(0)},
					},
					NextCreated: at(21880),
				}},
			},
			{
				Name: "nginx", Kind: correlator.KindMain, Index: 0, Image: "localhost/nginx:local",
				Attempts: []correlator.ContainerAttempt{{
					Attempt: 0, ContainerID: "c3d4e5f6a7b8",
					Created: at(21880), Started: at(22010),
					Process: &correlator.Process{
						PID: 4500, Filename: "/bin/busybox", Argv: []string{"httpd", "-f", "-p", "80"},
						Exec: at(22004),
					},
					StartedObserved: at(27060), ReadyObserved: at(27090),
					Probes: []correlator.ProbeAttempt{
						{Kind: correlator.ProbeStartup, Handler: "httpGet", Start: at(27050), Result: correlator.ProbeSuccess, Inferred: true},
						{Kind: correlator.ProbeReadiness, Handler: "httpGet", Start: at(27080), Result: correlator.ProbeSuccess, Inferred: true},
					},
				}},
			},
		},
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: at(45), LastTransitionTime: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: at(760), LastTransitionTime: t0, Cause: at(742), CauseEvent: "sandbox ready"},
			{Type: correlator.CondInitialized, Observed: at(15310), LastTransitionTime: at(15000), Cause: at(15240), CauseEvent: "init-sidecar startupProbe success"},
			{Type: correlator.CondContainersReady, Observed: at(27095), LastTransitionTime: at(27000), Cause: at(27080), CauseEvent: "nginx readinessProbe success"},
			{Type: correlator.CondReady, Observed: at(27097), LastTransitionTime: at(27000), Cause: at(27080), CauseEvent: "nginx readinessProbe success"},
		},
		Insights: []correlator.Insight{
			{Kind: correlator.InsightProbeDelay, Container: "init-sidecar", Duration: 5015 * time.Millisecond,
				Message: "startupProbe initialDelaySeconds left init-sidecar idle 5.0s after its process was up"},
		},
		CriticalPath: []correlator.Step{
			{Name: correlator.PhaseSchedule, Kind: correlator.ShareSchedule, Start: at(0), End: at(45)},
			{Name: correlator.PhaseWaitSandbox, Kind: correlator.ShareWaitSandbox, Start: at(52), End: at(310)},
			{Name: correlator.PhaseSandbox, Kind: correlator.ShareSandbox, Start: at(310), End: at(742)},
			{Name: "init/init-regular", Kind: correlator.ShareRun, What: "init-regular", Start: at(4912), End: at(10036)},
			{Name: "sidecar/init-sidecar", Kind: correlator.ShareProbeDelay, What: "init-sidecar", Start: at(10118), End: at(15300)},
			{Name: "container/nginx", Kind: correlator.ShareRun, What: "nginx", Start: at(21880), End: at(27090)},
		},
	})
}

const failedUID = "0d9e8f7a-6b5c-4d3e-9f2a-1b0c9d8e7f6a"

// initFailureNever is seed 003's init container exiting 42 in a pod with
// restartPolicy Never: the pod fails, the app container never starts.
func initFailureNever() *correlator.Timeline {
	return &correlator.Timeline{
		Pod:     correlator.PodRef{UID: failedUID, Namespace: "demo", Name: "init-container-failure-never", Node: "readyline-node"},
		Start:   t0,
		End:     at(1630),
		Outcome: correlator.OutcomeFailed,
		Reason:  "init container fail-on-purpose exited 42 (restartPolicy Never)",
		Phases: []correlator.Phase{
			{Name: correlator.PhaseSchedule, Start: at(0), End: at(38), Source: "api"},
			{Name: correlator.PhaseWaitSandbox, Start: at(44), End: at(260), Source: "api"},
			{Name: correlator.PhaseSandbox, Start: at(260), End: at(655), Source: "runtime"},
			{Name: correlator.PhaseInit, Start: at(702), End: at(1480), Source: "kernel"},
		},
		Sandbox: &correlator.Sandbox{ID: "9a8b7c6d5e4f", Created: at(260), Ready: at(655)},
		Containers: []correlator.Container{
			{
				Name: "fail-on-purpose", Kind: correlator.KindInit, Image: "localhost/busybox:local",
				Attempts: []correlator.ContainerAttempt{{
					Attempt: 0, ContainerID: "d4e5f6a7b8c9",
					Created: at(702), Started: at(811),
					Process: &correlator.Process{
						PID: 5101, Filename: "/bin/sh",
						Argv: []string{"sh", "-c", "echo 'init failed on purpose'; exit 42"},
						Exec: at(803), Exit: at(1474), ExitCode: intp(42),
					},
					Finished: at(1480), ExitCode: intp(42),
				}},
			},
			{Name: "app", Kind: correlator.KindMain, Image: "localhost/nginx:local"},
		},
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: at(38), LastTransitionTime: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: at(670), LastTransitionTime: t0, Cause: at(655), CauseEvent: "sandbox ready"},
		},
	}
}

// postStartDemo is the seed's poststart-demo: a 15 s exec postStart hook
// holds the status write, so Ready is reported ~15 s after the process is up.
func postStartDemo() *correlator.Timeline {
	return &correlator.Timeline{
		Pod:     correlator.PodRef{UID: "11111111-2222-4333-8444-555555555555", Namespace: "default", Name: "poststart-demo"},
		Start:   t0,
		End:     at(16412),
		Outcome: correlator.OutcomeReady,
		Phases: []correlator.Phase{
			{Name: correlator.PhaseSchedule, Start: at(0), End: at(31), Source: "api"},
			{Name: correlator.PhaseWaitSandbox, Start: at(40), End: at(233), Source: "api"},
			{Name: correlator.PhaseSandbox, Start: at(233), End: at(690), Source: "runtime"},
			{Name: correlator.PhaseContainers, Start: at(731), End: at(16405), Source: "api"},
		},
		Sandbox: &correlator.Sandbox{ID: "77aa88bb99cc", Created: at(233), PauseStart: at(540), Ready: at(690)},
		Containers: []correlator.Container{{
			Name: "main", Kind: correlator.KindMain, Image: "localhost/busybox:local",
			Attempts: []correlator.ContainerAttempt{{
				Attempt: 0, ContainerID: "e5f6a7b8c9d0",
				Created: at(731), Started: at(840),
				Process: &correlator.Process{PID: 6001, Filename: "/bin/sh", Argv: []string{"sh", "-c", "sleep 3600"}, Exec: at(833)},
				PostStart: &correlator.Hook{
					Handler: "exec", Command: []string{"sh", "-c", "sleep 15"},
					Start: at(861), End: at(15874), ExitCode: intp(0),
				},
				StartedObserved: at(16401), ReadyObserved: at(16403),
			}},
		}},
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: at(31), LastTransitionTime: t0},
			{Type: correlator.CondInitialized, Observed: at(31), LastTransitionTime: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: at(15990), LastTransitionTime: at(15000), Cause: at(690), CauseEvent: "sandbox ready"},
			{Type: correlator.CondContainersReady, Observed: at(16405), LastTransitionTime: at(16000), Cause: at(840), CauseEvent: "main started"},
			{Type: correlator.CondReady, Observed: at(16412), LastTransitionTime: at(16000), Cause: at(840), CauseEvent: "main started"},
		},
		Insights: []correlator.Insight{
			{Kind: correlator.InsightStatusLag, Duration: 15300 * time.Millisecond,
				Message: "PodReadyToStartContainers was reported 15.3s after the sandbox was ready (the postStart hook of main held the status write)"},
			{Kind: correlator.InsightStatusLag, Container: "main", Duration: 15565 * time.Millisecond,
				Message: "Ready was reported 15.6s after main started: its postStart hook ran 15.0s"},
		},
		CriticalPath: []correlator.Step{
			{Name: correlator.PhaseSchedule, Start: at(0), End: at(31)},
			{Name: correlator.PhaseWaitSandbox, Start: at(40), End: at(233)},
			{Name: correlator.PhaseSandbox, Start: at(233), End: at(690)},
			{Name: "container/main", Start: at(731), End: at(16403)},
		},
	}
}

const stuckUID = "3e2d1c0b-a987-4654-8321-0fedcba98765"

// Messages of stuckCrashLoop's waiting reasons, as the kubelet writes them.
const (
	stuckBackOff     = "back-off 40s restarting failed container=app pod=default/stuck(" + stuckUID + ")"
	stuckPullErr     = `failed to pull and unpack image "localhost/cache:nope": not found`
	stuckPullBackOff = `Back-off pulling image "localhost/cache:nope"`
	stuckCreateErr   = `failed to reserve container name "config_stuck_default": name is reserved`
)

// stuckCrashLoop is a pod that timed out after 40 s: its first
// RunPodSandbox failed (a CNI error), app exits 3 each time it runs
// (CrashLoopBackOff), cache's image cannot be pulled and config's
// CreateContainer fails.
func stuckCrashLoop() *correlator.Timeline {
	exit3 := func(attempt, created int, id string) correlator.ContainerAttempt {
		return correlator.ContainerAttempt{
			Attempt: attempt, ContainerID: id, Created: at(created), Started: at(created + 100),
			Process:  &correlator.Process{PID: uint32(7000 + attempt), Filename: "/bin/false", Exec: at(created + 110), Exit: at(created + 600), ExitCode: intp(3)},
			Finished: at(created + 600), ExitCode: intp(3),
		}
	}
	return &correlator.Timeline{
		Pod:     correlator.PodRef{UID: stuckUID, Namespace: "default", Name: "stuck", Node: "readyline-node"},
		Start:   t0,
		End:     at(40050),
		Outcome: correlator.OutcomeTimeout,
		Reason: "not Ready within 40s: app: CrashLoopBackOff (" + stuckBackOff + "), last exit 3; cache: ImagePullBackOff (" +
			stuckPullBackOff + "); config: CreateContainerError (" + stuckCreateErr + ")",
		Phases: []correlator.Phase{
			{Name: correlator.PhaseSchedule, Start: at(0), End: at(40), Source: "api-coarse"},
			{Name: correlator.PhaseWaitSandbox, Start: at(52), End: at(300), Source: "api"},
			{Name: correlator.PhaseSandbox, Start: at(300), End: at(2900), Source: "kernel"},
		},
		Sandbox: &correlator.Sandbox{
			ID: "6a5b4c3d2e1f", Created: at(2400), PauseStart: at(2500), Ready: at(2900),
			Call:        &correlator.CRICall{Method: cri.CRIRunPodSandbox, Start: at(2300), End: at(2900)},
			FailedCalls: []correlator.CRICall{{Method: cri.CRIRunPodSandbox, Start: at(300), End: at(800), Err: true}},
		},
		ImagePulls: []correlator.ImagePull{{Container: "cache", Image: "localhost/cache:nope",
			Call: correlator.CRICall{Method: cri.CRIPullImage, Start: at(3250), End: at(3300), Err: true}}},
		Containers: []correlator.Container{
			{
				Name: "app", Kind: correlator.KindMain, Index: 0, Image: "localhost/busybox:local",
				Attempts: []correlator.ContainerAttempt{exit3(0, 3100, "a0a0a0a0a0a0"), exit3(1, 14300, "a1a1a1a1a1a1"), exit3(2, 35400, "a2a2a2a2a2a2")},
				Waiting:  []correlator.WaitingReason{{Reason: "CrashLoopBackOff", Message: stuckBackOff, First: at(3800), Last: at(39000), Times: 3}},
			},
			{
				Name: "cache", Kind: correlator.KindMain, Index: 1, Image: "localhost/cache:nope",
				Waiting: []correlator.WaitingReason{
					{Reason: "ErrImagePull", Message: stuckPullErr, First: at(3350), Last: at(3350), Times: 1},
					{Reason: "ImagePullBackOff", Message: stuckPullBackOff, First: at(3800), Last: at(39000), Times: 1},
				},
			},
			{
				Name: "config", Kind: correlator.KindMain, Index: 2, Image: "localhost/busybox:local",
				FailedCalls: []correlator.CRICall{
					{Method: cri.CRICreateContainer, Start: at(3400), End: at(3500), Err: true},
					{Method: cri.CRICreateContainer, Start: at(15000), End: at(15100), Err: true},
				},
				Waiting: []correlator.WaitingReason{{Reason: "CreateContainerError", Message: stuckCreateErr, First: at(3800), Last: at(39000), Times: 1}},
			},
		},
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: at(40), LastTransitionTime: t0},
			{Type: correlator.CondInitialized, Observed: at(40), LastTransitionTime: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: at(2950), LastTransitionTime: at(2000), Cause: at(2900), CauseEvent: "RunPodSandbox returned"},
		},
		Insights: []correlator.Insight{
			{Kind: correlator.InsightRetries, Container: "app", Duration: 32300 * time.Millisecond,
				Message: "app ran 3 times (exit codes 3, 3, 3); the retries took 32.3s"},
		},
	}
}

// lateSeen is lifecycle-demo as a readyline restarted 13 s into the start
// saw it: the conditions already True are coarse, the init container's
// process and the sandbox's RunPodSandbox call are missing.
func lateSeen() *correlator.Timeline {
	tl := lifecycleDemo()
	tl.Pod.Name = "late-seen"
	tl.ObservedSince = at(13000)
	tl.Missing = []string{
		"the RunPodSandbox call (the sandbox's times are the runtime's)",
		"the pause process",
		"init init-regular: its process and CRI calls",
		"the transitions of the conditions already True (their lastTransitionTime, 1 s, stands in)",
	}
	tl.Sandbox.PauseStart = time.Time{}
	tl.Containers[0].Attempts[0].Process = nil
	// The pod was first seen after its sandbox: no wait for it is known.
	tl.Phases = append(tl.Phases[:1], tl.Phases[2:]...)
	tl.CriticalPath = append(tl.CriticalPath[:1], tl.CriticalPath[2:]...)
	for i := range tl.Conditions[:2] {
		c := &tl.Conditions[i]
		c.Observed, c.Coarse = c.LastTransitionTime, true
	}
	return tl
}

// staticPodUID is the mirror pod's UID; staticHash its config hash.
const (
	staticPodUID = "3f2e1d0c-9b8a-4766-a554-433221100ffe"
	staticHash   = "6d1c8e0a5b9f4e3d2c1b0a9f8e7d6c5b"
)

// staticPod is a static pod (etcd) whose mirror pod came after its start.
func staticPod() *correlator.Timeline {
	tl := lifecycleDemo()
	tl.Pod = correlator.PodRef{UID: staticPodUID, Namespace: "kube-system", Name: "etcd-readyline-node",
		Node: "readyline-node", ConfigHash: staticHash}
	for i := range tl.Conditions {
		c := &tl.Conditions[i]
		c.Observed, c.Coarse = c.LastTransitionTime, true
	}
	return tl
}

// blindSources is lifecycle-demo during which three sources were blind: the
// kubelet's CRI client was not probed from before the start to 1.2 s (it
// had restarted), the process ring buffer lost records twice (120 and 30)
// and the API server stopped answering at 26 s, still down at the end.
func blindSources() *correlator.Timeline {
	tl := lifecycleDemo()
	tl.Pod.Name = "blind-sources"
	tl.Gaps = []correlator.SourceGap{
		{Source: cri.SourceCRICalls, Windows: []correlator.BlindWindow{{Reason: "kubelet_restarted", From: at(-3000), To: at(1200)}}},
		{Source: cri.SourceProcess, Windows: []correlator.BlindWindow{
			{Reason: cri.ReasonRingFull, From: at(9100), To: at(10100), Lost: 120},
			{Reason: cri.ReasonRingFull, From: at(22000), To: at(23000), Lost: 30},
		}},
		{Source: cri.SourcePodWatch, Windows: []correlator.BlindWindow{{Reason: cri.ReasonDisconnected, From: at(26000)}}},
	}
	return tl
}

// withBreakdown sets tl's Breakdown from its critical path, as the
// correlator does.
func withBreakdown(tl *correlator.Timeline) *correlator.Timeline {
	tl.Breakdown = correlator.BreakdownOf(tl)
	return tl
}
