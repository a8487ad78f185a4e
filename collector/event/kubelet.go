package event

import (
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/redact"
)

// TypePodEvents names PodEvents in the JSON encoding.
const TypePodEvents Type = "pod_events"

// PodEvents are the Events the API server holds about one pod, as read on
// request (podevents.Reader): the kubelet's own words about the
// pod's start (FailedMount, FailedCreatePodSandBox, Pulled, BackOff,
// Unhealthy, Killing, FailedPostStartHook, Evicted, Preempting...), and
// those of other components about it. Every read lists them all, so a
// later PodEvents of the pod replaces an earlier one.
type PodEvents struct {
	// Time is when they were read.
	Time      time.Time `json:"time"`
	PodUID    string    `json:"pod_uid"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// Events are the pod's Events, oldest first, at most MaxPodEvents of
	// them (the latest), each message at most MaxEventMessage bytes and
	// redacted.
	Events []PodEvent `json:"events,omitempty"`
	// Omitted counts the Events left out beyond MaxPodEvents.
	Omitted int `json:"omitted,omitempty"`
	// Claims are the Events about the pod's PersistentVolumeClaims (each
	// its Claim set), read when the pod waited for them to be bound: the
	// provisioner's Provisioning and ProvisioningSucceeded, the volume
	// controller's; at most MaxClaimEvents, the latest. ClaimsRead says
	// they were read: a read of the pod's own Events alone leaves the
	// claims' as an earlier read had them.
	Claims     []PodEvent `json:"claims,omitempty"`
	ClaimsRead bool       `json:"claims_read,omitempty"`
	// Err says why they could not be read (a node without the grant to
	// list Events: forbidden); Events is then empty.
	Err string `json:"err,omitempty"`
}

func (*PodEvents) Type() Type        { return TypePodEvents }
func (e *PodEvents) When() time.Time { return e.Time }

// Bounds of a PodEvents.
const (
	MaxPodEvents    = 64
	MaxClaimEvents  = 32
	MaxEventMessage = 1024
)

// PodEvent is one Event about a pod, as the API server de-duplicated it:
// Count occurrences of the same reason and message, the first at First and
// the last at Last (1 s precision for core/v1 timestamps).
type PodEvent struct {
	// Type is Normal or Warning.
	Type   string `json:"type"`
	Reason string `json:"reason"`
	// Message is what the component said, redacted (an Unhealthy
	// probe's output may hold anything) and cut at MaxEventMessage.
	Message string `json:"message,omitempty"`
	// FieldPath names the container the Event is about:
	// "spec.containers{app}", "spec.initContainers{init}"; empty for the
	// pod.
	FieldPath string `json:"field_path,omitempty"`
	// Claim is the pod's PersistentVolumeClaim the Event is about (in
	// PodEvents.Claims), empty for the pod's own.
	Claim string `json:"claim,omitempty"`
	// Component and Host are who reported it: "kubelet" and its node.
	Component string    `json:"component,omitempty"`
	Host      string    `json:"host,omitempty"`
	Count     int32     `json:"count,omitempty"`
	First     time.Time `json:"first,omitzero"`
	Last      time.Time `json:"last,omitzero"`
}

// Container is the name of the container FieldPath names, "" when it names
// none.
func (e PodEvent) Container() string {
	for _, prefix := range []string{"spec.containers{", "spec.initContainers{", "spec.ephemeralContainers{"} {
		if len(e.FieldPath) > len(prefix) && e.FieldPath[:len(prefix)] == prefix && e.FieldPath[len(e.FieldPath)-1] == '}' {
			return e.FieldPath[len(prefix) : len(e.FieldPath)-1]
		}
	}
	return ""
}

// CutMarker ends a message cut at its bound.
const CutMarker = "…"

// CutMessage returns msg when it has at most max bytes, else its first max
// bytes at most, cut on a rune boundary, and CutMarker.
func CutMessage(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + CutMarker
}

// PodEventOf is one core/v1 Event as a PodEvent: its first and
// last time from the deprecated timestamps or, for Events written through
// events.k8s.io (eventTime, series), from those; the component and host
// likewise; the message as argv lets it leave the node (redact.Policy's
// Message), then cut at MaxEventMessage bytes.
func PodEventOf(ev *corev1.Event, argv redact.Policy) PodEvent {
	pe := PodEvent{
		Type: ev.Type, Reason: ev.Reason, FieldPath: ev.InvolvedObject.FieldPath,
		Component: ev.Source.Component, Host: ev.Source.Host, Count: ev.Count,
		First: ev.FirstTimestamp.Time, Last: ev.LastTimestamp.Time,
	}
	if pe.Component == "" {
		pe.Component = ev.ReportingController
	}
	if pe.Host == "" {
		pe.Host = ev.ReportingInstance
	}
	if pe.First.IsZero() {
		pe.First = ev.EventTime.Time
	}
	if s := ev.Series; s != nil {
		pe.Count = max(pe.Count, s.Count)
		if s.LastObservedTime.After(pe.Last) {
			pe.Last = s.LastObservedTime.Time
		}
	}
	if pe.Last.IsZero() {
		pe.Last = pe.First
	}
	if pe.Count == 0 {
		pe.Count = 1
	}
	pe.First, pe.Last = pe.First.UTC(), pe.Last.UTC()
	pe.Message = CutMessage(argv.Message(ev.Message), MaxEventMessage)
	return pe
}
