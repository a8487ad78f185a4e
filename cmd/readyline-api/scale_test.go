package main

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/exporter/podstartapi"
)

// podsPerNode is the kubelet's default maxPods.
const podsPerNode = 110

// nodeStarts is what one node of a simulated cluster reports: 110 starts
// spread over 50 namespaces, one in ten still starting.
func nodeStarts(node int, t0 time.Time) []*podstartapi.PodStart {
	out := make([]*podstartapi.PodStart, podsPerNode)
	for i := range out {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", node, i)
		outcome, waiting := "ready", ""
		if i%10 == 0 {
			outcome, waiting = "starting", "app: readinessProbe failing ×3: HTTP probe failed with statuscode: 503"
		}
		out[i] = &podstartapi.PodStart{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%02d", (node+i)%50), Name: fmt.Sprintf("app-%d-%d", node, i),
				UID: types.UID(uid), CreationTimestamp: metav1.NewTime(t0)},
			Spec: podstartapi.PodStartSpec{NodeName: fmt.Sprintf("node-%05d", node), PodUID: uid},
			Status: podstartapi.PodStartStatus{Outcome: outcome, StartTime: metav1.NewTime(t0), WaitingOn: waiting,
				TraceID: uid},
		}
	}
	return out
}

// BenchmarkClusterScale fills one replica's store as polls of N nodes of
// 110 pods would, and measures what it holds and what its reads cost:
// heap per start, a list of one namespace, a list of every namespace, and
// a poll that finds a node unchanged (the steady state: one per node per
// poll interval). It fails when a goal the README quotes is missed. The
// store alone: no API server, no HTTP (the nodes' answers are decoded
// objects already).
func BenchmarkClusterScale(b *testing.B) {
	for _, nodes := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			t0 := time.Now()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s := newSummaries(10000, nil)
			for n := range nodes {
				s.ReplaceNode(fmt.Sprintf("node-%05d", n), nodeStarts(n, t0))
			}
			starts := nodes * podsPerNode
			// Polls as they come: each decodes new objects, which say the
			// same as the store's.
			const polls = 200
			fresh := make([][]*podstartapi.PodStart, polls)
			for i := range fresh {
				fresh[i] = nodeStarts(i%nodes, t0)
			}
			// kubectl's pages (500) of every namespace's starts, from the
			// middle of the list.
			mid := podKey{"team-25", fmt.Sprintf("app-%d-0", nodes/2)}
			var nsList, allList, pageList, poll time.Duration
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				l, _ := s.List("team-07", all)
				nsList += time.Since(t)
				if len(l) == 0 {
					b.Fatal("no starts in team-07")
				}
				t = time.Now()
				s.List("", all)
				allList += time.Since(t)
				runtime.GC() // the list's garbage is the list's cost
				t = time.Now()
				if pg := s.Page("", &mid, 500, all, true); len(pg.Items) != 500 || !pg.More || pg.Remaining <= 0 {
					b.Fatalf("a page of 500 after %v: %d starts, more %v", mid, len(pg.Items), pg.More)
				}
				pageList += time.Since(t)
				runtime.GC()
				t = time.Now()
				for j, r := range fresh {
					s.ReplaceNode(fmt.Sprintf("node-%05d", j%nodes), r)
				}
				poll += time.Since(t) / polls
				for j := range fresh {
					fresh[j] = nodeStarts(j%nodes, t0)
				}
			}
			fresh = nil
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(after.HeapAlloc) - float64(before.HeapAlloc) // the store, after its polls
			runtime.KeepAlive(s)
			b.ReportMetric(float64(nsList.Microseconds())/float64(b.N)/1000, "ms/list-ns")
			b.ReportMetric(float64(allList.Microseconds())/float64(b.N)/1000, "ms/list-A")
			b.ReportMetric(float64(pageList.Microseconds())/float64(b.N)/1000, "ms/page")
			b.ReportMetric(float64(poll.Microseconds())/float64(b.N), "µs/poll")
			b.ReportMetric(heap/float64(starts), "heapB/start")
			b.ReportMetric(heap/(1<<20), "heapMiB")
			// The goals the README quotes, on this 2-core machine.
			perList := time.Duration(nodes) * time.Millisecond
			switch {
			case heap/float64(starts) > 1024:
				b.Errorf("%.0f bytes of heap a start, over the 1 KiB goal", heap/float64(starts))
			case poll > 2*time.Millisecond:
				b.Errorf("a poll that finds its node unchanged took %v, over the 2 ms goal", poll)
			case nsList/time.Duration(b.N) > 100*time.Millisecond:
				b.Errorf("a list of one namespace took %v, over the 100 ms goal", nsList/time.Duration(b.N))
			case pageList/time.Duration(b.N) > 50*time.Millisecond:
				b.Errorf("a page of 500 starts took %v, over the 50 ms goal", pageList/time.Duration(b.N))
			case allList/time.Duration(b.N) > perList:
				b.Errorf("a list of every namespace took %v, over the goal of 1 ms a node (%v)", allList/time.Duration(b.N), perList)
			}
		})
	}
}
