package exporter

import "github.com/readyline/readyline/exporter/internal/fixtures"

// The pod starts the tests draw are written in exporter/internal/fixtures,
// which exporter/waterfall's tests draw too; these are their names here.
var (
	t0               = fixtures.T0
	at               = fixtures.At
	intp             = fixtures.IntP
	lifecycleDemo    = fixtures.LifecycleDemo
	initFailureNever = fixtures.InitFailureNever
	postStartDemo    = fixtures.PostStartDemo
	stuckCrashLoop   = fixtures.StuckCrashLoop
	lateSeen         = fixtures.LateSeen
	staticPod        = fixtures.StaticPod
	blindSources     = fixtures.BlindSources
	probeRetries     = fixtures.ProbeRetries
	restarts         = fixtures.Restarts
)

const (
	lifecycleUID     = fixtures.LifecycleUID
	staticPodUID     = fixtures.StaticPodUID
	staticHash       = fixtures.StaticHash
	stuckBackOff     = fixtures.StuckBackOff
	stuckPullBackOff = fixtures.StuckPullBackOff
)
