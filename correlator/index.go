package correlator

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// ownerIndex knows which pod a container id, sandbox id or pod IP belongs
// to: most CRI calls name only an id, TCP probe connections only an
// address. Entries are learned from every source, for every pod on the node
// (the pods whose start is not traced too, so their calls are recognised),
// and forgotten once their pod is gone and they are unused for a while.
// Events naming something not yet known wait in pending, like orphans.
//
// A connection is routed by its address and port first: every hostNetwork
// pod has the node's IP, so the IP alone names no pod there, and only the
// ports of a pod's own probes and hooks (connPorts) tell them apart. An IP
// that is the node's is never an "ip:" key.
type ownerIndex struct {
	owners  map[string]*ownerEntry // "id:<id>", "ip:<ip>" or "ipport:<ip>:<port>" -> pod
	pending map[string]*orphanEvents
	// net: each pod's addresses and probe ports, to make its "ipport:" keys
	// whichever of the two is learned first.
	net map[string]*podNet
	// hostIPs: the node's own addresses (status.hostIPs, and the pod IPs of
	// hostNetwork pods).
	hostIPs map[string]bool
	// staleFrom is no later than the oldest use of the entries that were
	// fresh at forget's last pass or learned since (zero: none), and
	// recheck says a pod may have become unknown since that pass: until
	// one of the entries may have gone stale or recheck is set, a pass
	// would drop nothing, and forget skips it (a node of long-lived pods
	// keeps hundreds of entries, each stale and known).
	staleFrom time.Time
	recheck   bool
}

type ownerEntry struct {
	uid  string
	used time.Time
}

// podNet is what routes a pod's connections.
type podNet struct {
	ips         []string
	ports       []uint16
	hostNetwork bool
	used        time.Time
}

func newOwnerIndex() ownerIndex {
	return ownerIndex{owners: make(map[string]*ownerEntry), pending: make(map[string]*orphanEvents),
		net: make(map[string]*podNet), hostIPs: make(map[string]bool)}
}

func idKey(id string) string                  { return string(appendIDKey(nil, id)) }
func ipKey(ip string) string                  { return string(appendIPKey(nil, ip)) }
func ipPortKey(ip string, port uint16) string { return string(appendIPPortKey(nil, ip, port)) }

// The append forms build a key in a caller's buffer: a map lookup by
// string(key) allocates nothing, and most events name an id known already.
func appendIDKey(b []byte, id string) []byte { return append(append(b, "id:"...), id...) }
func appendIPKey(b []byte, ip string) []byte { return append(append(b, "ip:"...), ip...) }
func appendIPPortKey(b []byte, ip string, port uint16) []byte {
	b = append(append(append(b, "ipport:"...), ip...), ':')
	return strconv.AppendUint(b, uint64(port), 10)
}

// owner is the pod key names, "" when none.
func (x *ownerIndex) owner(key string) string {
	if o := x.owners[key]; o != nil {
		return o.uid
	}
	return ""
}

// learnFrom records what an event says about who owns what; it returns the
// keys that became known (their pending events can now be routed).
func (x *ownerIndex) learnFrom(ev event.Event, now time.Time) []string {
	var learned []string
	var buf [96]byte
	learn := func(k []byte, uid string) {
		if uid == "" || string(k) == "id:" || string(k) == "ip:" {
			return
		}
		if o := x.owners[string(k)]; o != nil && o.uid == uid {
			o.used = now // fresher: forget's staleFrom still holds
			return
		}
		key := string(k)
		learned = append(learned, key)
		x.owners[key] = &ownerEntry{uid: uid, used: now}
		x.staleFrom = earliest(x.staleFrom, now)
	}
	switch e := ev.(type) {
	case *event.ProcessExec:
		learn(appendIDKey(buf[:0], e.ContainerID), e.PodUID)
	case *event.ContainerInfo:
		learn(appendIDKey(buf[:0], e.ContainerID), e.PodUID)
		learn(appendIDKey(buf[:0], e.SandboxID), e.PodUID)
		if e.Sandbox && e.PodIP != "" && e.PodUID != "" {
			x.netOf(e.PodUID, now).addIP(e.PodIP)
			x.learnNet(e.PodUID, learn)
		}
	case *event.CRICall:
		learn(appendIDKey(buf[:0], e.PodSandboxID), e.PodUID)
		learn(appendIDKey(buf[:0], e.ContainerID), e.PodUID)
	case *event.PodUpdate:
		if e.Pod == nil || e.Action == event.PodDeleted {
			break
		}
		uid := string(e.Pod.UID)
		n := x.netOf(uid, now)
		n.hostNetwork, n.ports = e.Pod.Spec.HostNetwork, connPorts(e.Pod)
		for _, ip := range e.Pod.Status.HostIPs {
			x.addHostIP(ip.IP)
		}
		x.addHostIP(e.Pod.Status.HostIP)
		for _, ip := range e.Pod.Status.PodIPs {
			n.addIP(ip.IP)
		}
		x.learnNet(uid, learn)
		for _, list := range [][]corev1.ContainerStatus{e.Pod.Status.InitContainerStatuses, e.Pod.Status.ContainerStatuses} {
			for _, cs := range list {
				learn(appendIDKey(buf[:0], stripRuntime(cs.ContainerID)), uid)
			}
		}
	}
	return learned
}

// learnNet learns the address keys of pod uid: "ipport:" for each of its
// IPs and probe ports, and "ip:" for IPs that are its own (not the node's).
func (x *ownerIndex) learnNet(uid string, learn func(key []byte, uid string)) {
	n := x.net[uid]
	var buf [64]byte
	for _, ip := range n.ips {
		if n.hostNetwork {
			x.addHostIP(ip)
		}
		if !x.hostIPs[ip] {
			learn(appendIPKey(buf[:0], ip), uid)
		}
		for _, port := range n.ports {
			learn(appendIPPortKey(buf[:0], ip, port), uid)
		}
	}
}

func (x *ownerIndex) netOf(uid string, now time.Time) *podNet {
	n := x.net[uid]
	if n == nil {
		n = &podNet{}
		x.net[uid] = n
	}
	n.used = now
	x.staleFrom = earliest(x.staleFrom, now)
	return n
}

func (n *podNet) addIP(ip string) {
	if ip != "" && !slices.Contains(n.ips, ip) {
		n.ips = append(n.ips, ip)
	}
}

// addHostIP notes one of the node's addresses: it stops naming a pod by
// itself (a pod learned before the node's address was known loses it).
func (x *ownerIndex) addHostIP(ip string) {
	if ip == "" || x.hostIPs[ip] {
		return
	}
	x.hostIPs[ip] = true
	delete(x.owners, ipKey(ip))
}

// lookup finds the pod an event belongs to through the index; otherwise
// key is where the event waits for its owner ("" when it names nobody a
// pod could turn out to be). A connection waits under its IP, whatever
// its port: a pod IP is learned before or with its ports. The key is
// built only for an event no pod is found for.
func (x *ownerIndex) lookup(ev event.Event, now time.Time) (uid, key string) {
	// The keys an event can be routed by, best first.
	var buf [2][80]byte
	var keys [2][]byte
	switch e := ev.(type) {
	case *event.CRICall:
		keys = [2][]byte{appendIDKey(buf[0][:0], e.ContainerID), appendIDKey(buf[1][:0], e.PodSandboxID)}
	case *event.TCPConnection:
		keys = [2][]byte{appendIPPortKey(buf[0][:0], e.Daddr, e.Dport), appendIPKey(buf[1][:0], e.Daddr)}
	}
	var wait []byte
	for _, k := range keys {
		if k == nil || string(k) == "id:" || string(k) == "ip:" {
			continue
		}
		if wait == nil {
			wait = k
		}
		if o := x.owners[string(k)]; o != nil {
			o.used = now
			return o.uid, ""
		}
	}
	if wait != nil {
		key = string(wait)
	}
	if c, ok := ev.(*event.TCPConnection); ok {
		if isLoopback(c.Daddr) {
			// A probe with host 127.0.0.1 (kubeadm's static pods): the
			// kubelet's own network namespace, which hostNetwork pods
			// share, so the port is theirs on the node's addresses.
			for ip := range x.hostIPs {
				if o := x.owners[ipPortKey(ip, c.Dport)]; o != nil {
					o.used = now
					return o.uid, ""
				}
			}
			return "", "" // a node-local service, not a pod
		}
		if x.hostIPs[c.Daddr] {
			// The node's address on a port no pod probes: the kubelet
			// talking to the API server, a node-local service, not a pod.
			return "", ""
		}
		key = ipKey(c.Daddr)
	}
	return "", key
}

// pendingKey is the key events wait under for a learned key.
func pendingKey(key string) string {
	if rest, ok := strings.CutPrefix(key, "ipport:"); ok {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			return ipKey(rest[:i])
		}
	}
	return key
}

// forget drops the entries of pods that known does not know (deleted, or
// never seen in the API) once unused for longer than ttl: the ids of a pod
// that lives on keep naming it, so that its exec probes are recognised
// however long ago its start ended. known must answer as it did at the
// last call unless knownMayShrink was called since.
func (x *ownerIndex) forget(now time.Time, ttl time.Duration, known func(uid string) bool) {
	if !x.recheck && (x.staleFrom.IsZero() || now.Sub(x.staleFrom) <= ttl) {
		return // nothing stale but entries of pods known at the last pass
	}
	x.recheck, x.staleFrom = false, time.Time{}
	keep := func(used time.Time, uid string) bool {
		if now.Sub(used) <= ttl {
			x.staleFrom = earliest(x.staleFrom, used)
			return true
		}
		return known(uid)
	}
	for k, o := range x.owners {
		if !keep(o.used, o.uid) {
			delete(x.owners, k)
		}
	}
	for uid, n := range x.net {
		if !keep(n.used, uid) {
			delete(x.net, uid)
		}
	}
}

// knownMayShrink tells forget that a pod it was told is known may not be
// any more (forgotten, or a static pod's alias moved).
func (x *ownerIndex) knownMayShrink() { x.recheck = true }

// cniBuffer keeps the recent CNI plugin processes: they run on the host,
// outside any pod, and are put in a sandbox by time (inside its
// RunPodSandbox call) when the pod's timeline is derived, which may be
// minutes later. So a process is kept for cniKeep, and longer while a pod
// start that was seen before it is still in progress (prune), up to cniMax
// processes.
type cniBuffer struct {
	procs []cniProc // in the order they were seen
	byPID map[uint32]*procRecord
}

// cniProc is a CNI plugin process and when the correlator learnt of it, on
// its clock (clock.now, which never steps).
type cniProc struct {
	*procRecord
	seen time.Time
}

const (
	cniKeep = time.Minute
	// cniMax bounds the buffer on a node that runs sandboxes non-stop
	// while one pod start stays in progress for its whole timeout: at
	// 3 plugins per sandbox, over 1300 sandboxes.
	cniMax = 4096
)

func (b *cniBuffer) record(ev event.Event, now time.Time) {
	switch e := ev.(type) {
	case *event.ProcessExec:
		if b.byPID == nil {
			b.byPID = make(map[uint32]*procRecord)
		}
		r := &procRecord{pid: e.PID, ppid: e.PPID, exec: e.Time, filename: e.Filename, argv: e.Argv, truncated: e.ArgvTruncated,
			cniContainerID: e.CNIContainerID, cniCommand: e.CNICommand}
		b.procs = append(b.procs, cniProc{r, now})
		b.byPID[e.PID] = r
		if len(b.procs) > cniMax {
			b.forget(len(b.procs) - cniMax)
		}
	case *event.ProcessExit:
		if r := b.byPID[e.PID]; r != nil && r.exit.IsZero() {
			r.exit, r.exitCode, r.signal = e.Time, exitCodeOf(e), e.Signal
		}
	}
}

// prune forgets the processes seen more than cniKeep before now and
// before oldest, when the oldest pod start in progress was first seen
// (zero when there is none), both on the correlator's clock: a pod's
// sandbox is set up after its pod is seen, or, when the daemon started
// late, shortly before.
func (b *cniBuffer) prune(now, oldest time.Time) {
	from := now.Add(-cniKeep)
	if !oldest.IsZero() {
		from = earliest(from, oldest.Add(-cniKeep))
	}
	n := 0
	for n < len(b.procs) && b.procs[n].seen.Before(from) {
		n++
	}
	b.forget(n)
}

// forget drops the n oldest processes. An emptied buffer gives its memory
// back: a burst of pod starts grows it, and a quiet node keeps nothing.
func (b *cniBuffer) forget(n int) {
	for _, r := range b.procs[:n] {
		if b.byPID[r.pid] == r.procRecord {
			delete(b.byPID, r.pid)
		}
	}
	b.procs = b.procs[n:]
	if len(b.procs) == 0 {
		b.procs, b.byPID = nil, nil
	}
}

// forSandbox returns the CNI processes that said they set up sandbox id
// (CNI_CONTAINERID) with CNI_COMMAND ADD.
func (b *cniBuffer) forSandbox(id string) []*procRecord {
	var out []*procRecord
	for _, r := range b.procs {
		if r.cniContainerID == id && r.cniCommand == "ADD" {
			out = append(out, r.procRecord)
		}
	}
	return out
}

// within returns the CNI processes that started inside [start, end].
func (b *cniBuffer) within(start, end time.Time) []*procRecord {
	var out []*procRecord
	for _, r := range b.procs {
		if !r.exec.Before(start) && !r.exec.After(end) {
			out = append(out, r.procRecord)
		}
	}
	return out
}

// isLoopback: ip is a loopback address (127.0.0.0/8, ::1).
func isLoopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.IsLoopback()
}
