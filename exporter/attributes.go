package exporter

import "go.opentelemetry.io/otel/attribute"

// The attribute keys of the spans and span events spans.go builds. Those of
// image pulls (pulls.go), of links to a pod's traceparent (traceparent.go)
// and AttrStepKind (completion.go) stay beside the spans that carry them.

// readyline-specific attribute keys. Keys that exist in the OTel semantic
// conventions come from semconv instead.
const (
	AttrOutcome            = attribute.Key("readyline.outcome")
	AttrReason             = attribute.Key("readyline.reason")
	AttrCriticalPath       = attribute.Key("readyline.critical_path")
	AttrCriticalPathMillis = attribute.Key("readyline.critical_path.duration_ms")
	AttrCriticalPathKinds  = attribute.Key("readyline.critical_path.kind")
	// AttrBreakdown and AttrBreakdownMillis are where the time went
	// (correlator.Timeline.Breakdown): each kind of time, largest first, and
	// its milliseconds, adding up to the root span's; AttrTimeWent says it
	// in a line; AttrWaiting what a start that did not reach Ready waited on
	// last.
	AttrBreakdown       = attribute.Key("readyline.breakdown")
	AttrBreakdownMillis = attribute.Key("readyline.breakdown.duration_ms")
	AttrTimeWent        = attribute.Key("readyline.time_went")
	AttrWaiting         = attribute.Key("readyline.waiting")
	// The kubelet's Events about a pod are events "kubelet <Reason>" on the
	// root span (about the pod) or the container's span, at their first
	// time, with their type, message, count and last time (RFC 3339).
	AttrKubeletEventType    = attribute.Key("readyline.kubelet_event.type")
	AttrKubeletEventMessage = attribute.Key("readyline.kubelet_event.message")
	AttrKubeletEventCount   = attribute.Key("readyline.kubelet_event.count")
	AttrKubeletEventLast    = attribute.Key("readyline.kubelet_event.last")
	AttrPhaseSource         = attribute.Key("readyline.phase.source")
	AttrSandboxID           = attribute.Key("readyline.sandbox.id")
	AttrContainerKind       = attribute.Key("readyline.container.kind")
	AttrContainerExitCode   = attribute.Key("readyline.container.exit_code")
	AttrNextCreatedLagMS    = attribute.Key("readyline.container.next_created_lag_ms")
	AttrProcessSignal       = attribute.Key("readyline.process.signal")
	AttrProcessRunning      = attribute.Key("readyline.process.running")
	AttrHookHandler         = attribute.Key("readyline.hook.handler")
	AttrHookCommand         = attribute.Key("readyline.hook.command")
	AttrHookExitCode        = attribute.Key("readyline.hook.exit_code")
	AttrProbeKind           = attribute.Key("readyline.probe.kind")
	AttrProbeHandler        = attribute.Key("readyline.probe.handler")
	AttrProbeResult         = attribute.Key("readyline.probe.result")
	AttrProbeExitCode       = attribute.Key("readyline.probe.exit_code")
	AttrProbeMessage        = attribute.Key("readyline.probe.message") // the kubelet's words of a failure
	AttrInferred            = attribute.Key("readyline.inferred")
	AttrIncomplete          = attribute.Key("readyline.incomplete")
	// AttrClipped marks a span cut to lie inside its parent (and so inside
	// the root): what the timeline knew reached outside it, e.g. a probe
	// attempt after Ready. Spans wholly outside their parent are not made;
	// the root counts them in AttrOutside.
	AttrClipped = attribute.Key("readyline.clipped")
	AttrOutside = attribute.Key("readyline.spans_outside")
	// AttrBackOffMS is an attempt's wait since the previous attempt's exit;
	// AttrKilledBy the probe the kubelet killed it for; AttrTermReason the
	// runtime's terminated reason.
	AttrBackOffMS         = attribute.Key("readyline.container.back_off_ms")
	AttrKilledBy          = attribute.Key("readyline.container.killed_by")
	AttrTermReason        = attribute.Key("readyline.container.reason")
	AttrSandboxAttempt    = attribute.Key("readyline.sandbox.attempt")
	AttrTCPResult         = attribute.Key("readyline.tcp.result")
	AttrImageRef          = attribute.Key("readyline.image.ref")
	AttrConditionType     = attribute.Key("readyline.condition.type")
	AttrConditionLTT      = attribute.Key("readyline.condition.last_transition_time")
	AttrConditionCause    = attribute.Key("readyline.condition.cause_time")
	AttrConditionEvent    = attribute.Key("readyline.condition.cause_event")
	AttrConditionLagMS    = attribute.Key("readyline.condition.lag_ms")
	AttrInsightKind       = attribute.Key("readyline.insight.kind")
	AttrInsightMessage    = attribute.Key("readyline.insight.message")
	AttrInsightDurationMS = attribute.Key("readyline.insight.duration_ms")
	// AttrAlert names the alert rules a pod start broke (comma-separated on
	// the root span when there are several), on the root span and on the
	// span of each rule's measure; AttrAlertThresholdMS is the threshold
	// (on the root span only when one rule was broken).
	AttrAlert            = attribute.Key("readyline.alert")
	AttrAlertThresholdMS = attribute.Key("readyline.alert.threshold_ms")
	AttrAlertDurationMS  = attribute.Key("readyline.alert.duration_ms")
	AttrAlertReason      = attribute.Key("readyline.alert.reason")
	AttrAlertMessage     = attribute.Key("readyline.alert.message")
	AttrAlertNotReached  = attribute.Key("readyline.alert.not_reached")
	// A container's waiting reasons are events "waiting <reason>" on its
	// span, at the first update that showed the reason, with the reason, its
	// latest message, the last update that showed it (RFC 3339), the time
	// between them and how many separate times the container entered it;
	// AttrWaitingOmitted on the span counts the reasons the timeline did not
	// keep.
	AttrWaitingReason     = attribute.Key("readyline.waiting.reason")
	AttrWaitingMessage    = attribute.Key("readyline.waiting.message")
	AttrWaitingLast       = attribute.Key("readyline.waiting.last")
	AttrWaitingDurationMS = attribute.Key("readyline.waiting.duration_ms")
	AttrWaitingTimes      = attribute.Key("readyline.waiting.times")
	AttrWaitingOmitted    = attribute.Key("readyline.waiting.omitted")
	// AttrContainerNotCreated marks the span of a container that has no
	// attempt, made from its waiting reasons and failed calls.
	AttrContainerNotCreated = attribute.Key("readyline.container.not_created")
)

// Attribute keys of what readyline could not see as it happened.
const (
	// AttrStaticPod (true) and AttrConfigHash mark a static pod on the root
	// span: the trace is its mirror pod's, the hash is the UID its node
	// facts carry.
	AttrStaticPod  = attribute.Key("readyline.static_pod")
	AttrConfigHash = attribute.Key("readyline.config_hash")
	// AttrObservedSince (RFC 3339) is when readyline first saw a pod it saw
	// only after its start began. AttrMissing lists what the trace lacks:
	// because of that, and, one line per source, because a source was
	// blind during the start (correlator.SourceGap). AttrBlind names those
	// sources (comma-separated when there are several), and each has an
	// event "blind <source>" at its first blind moment in the start, with
	// AttrBlindSource, AttrBlindReason, AttrBlindLost and its line in
	// AttrBlindMessage. All on the root span (on pod.startup.completed for
	// the windows after a report).
	AttrObservedSince = attribute.Key("readyline.observed_since")
	AttrMissing       = attribute.Key("readyline.missing")
	AttrBlind         = attribute.Key("readyline.blind")
	AttrBlindSource   = attribute.Key("readyline.blind.source")
	AttrBlindReason   = attribute.Key("readyline.blind.reason")
	AttrBlindLost     = attribute.Key("readyline.blind.lost")
	AttrBlindMessage  = attribute.Key("readyline.blind.message")
	// AttrMarks lists, on the root span, what makes the trace less exact
	// than its sources (correlator.Mark: api_lag, clock_step);
	// AttrClockStepsMS the steps of the node's wall clock during the start.
	AttrMarks        = attribute.Key("readyline.marks")
	AttrClockStepsMS = attribute.Key("readyline.clock_steps_ms")
	// AttrConditionCoarse (true) marks a condition already True when
	// readyline first saw the pod, or delivered late: its time is its
	// lastTransitionTime (1 s) and it has no lag. AttrConditionDelivered
	// (RFC 3339) is when the watch delivered one late (api_lag).
	AttrConditionCoarse    = attribute.Key("readyline.condition.coarse")
	AttrConditionDelivered = attribute.Key("readyline.condition.delivered")
)

// Attributes of a start reported at its deadline and completed later.
const (
	// AttrPartial marks the root span of a start still in progress at its
	// report deadline: a pod.startup.completed span under it tells the rest.
	AttrPartial = attribute.Key("readyline.partial")
	// AttrStartupMS is the whole start's duration on pod.startup.completed.
	AttrStartupMS = attribute.Key("readyline.startup.duration_ms")
	// AttrAmbiguousCandidates are the probes ("<container>#<attempt> <kind>")
	// an "ambiguous probe" event's connection could have been.
	AttrAmbiguousCandidates = attribute.Key("readyline.probe.candidates")
)
