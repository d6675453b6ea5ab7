package main

// One cluster: the real scheduler (scheduler.New, default profile, default feature gates unless the
// cluster names others) on a fake
// clientset served by apiServer, driven on a fake clock until nothing changes.

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
)

const upstreamVersion = "v1.37.2"

// Simulated time starts where `podsched simulate` starts it (2026-01-01T00:00:00Z), on a whole
// second: timestamps pass through JSON (strategic merge patches) at second precision.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// livelockAfter bounds how long settle retries pods in error backoff whose every retry writes
// something: longer than any backoff (10 s, times the square root of a pod group's size).
const livelockAfter = 10 * time.Minute

// podMaxInUnschedulablePodsDuration is the scheduler's default (5 minutes).
const podMaxInUnschedulablePodsDuration = 5 * time.Minute

// settleTimeout bounds the wall time one settle may take: a cluster normally settles in
// milliseconds, so hitting it means the oracle's idea of "idle" and the scheduler disagree.
const settleTimeout = 60 * time.Second

type cluster struct {
	ctx     context.Context
	cancel  context.CancelFunc
	clock   *testingclock.FakeClock
	api     *apiServer
	factory informers.SharedInformerFactory
	counts  *handlerCounts
	sched   *scheduler.Scheduler
	queue   *internalqueue.PriorityQueue
	fw      framework.Framework
	runDone chan struct{}
	logger  klog.Logger
	// gate holds the scheduling loop while a file's objects are being created (see holdPops).
	gate atomic.Bool
	// attempting: a pod or a pod group (current: its pods) was handed to the scheduling loop,
	// which has not returned yet.
	attempting atomic.Bool
	current    atomic.Value // map[objectKey]bool
	seed       int64
	shuffle    *rand.Rand
	// backoffFrom: when the clock started moving for pods in error backoff with nothing else going on.
	backoffFrom time.Time
	// kick wakes the held scheduling loop, idleKick the oracle's own waits, after every handled
	// event and every finished attempt.
	kick     chan struct{}
	idleKick chan struct{}
	assumed  *assumeHook
}

func newCluster(parent context.Context, seed int64, gates map[string]bool) (*cluster, error) {
	// Feature gates are process-wide; clusters run one at a time, each with its own.
	if err := setFeatureGates(gates); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	c := &cluster{ctx: ctx, cancel: cancel, clock: testingclock.NewFakeClock(epoch), logger: klog.FromContext(ctx),
		kick: make(chan struct{}, 1), idleKick: make(chan struct{}, 1)}
	c.api = newAPIServer(c.clock)
	cs := fake.NewClientset()
	c.api.install(&cs.Fake)
	c.factory = informers.NewSharedInformerFactory(cs, 0)
	c.counts = newHandlerCounts(c.wake)
	wrapped := wrapFactory(c.factory, c.counts)
	// The scheduler's writes go through holdingClient (see holdWrite); the informers read cs.
	sched, err := scheduler.New(ctx, holdingClient{Clientset: cs, hold: c.holdWrite}, wrapped, nil,
		func(string) events.EventRecorderLogger { return recorder{log: c.api.log} },
		scheduler.WithClock(c.clock),
		// Parallelism 1 (upstream's default is 16 goroutines): Filter collects the feasible nodes in
		// the order its workers finish, and with no extender the scores' tie-break is that order, so
		// with 16 workers equal nodes are picked by goroutine timing. One worker checks the nodes in
		// upstream's own node order and makes the pick repeatable. Decisions are otherwise the same.
		scheduler.WithParallelism(1))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("scheduler.New: %w", err)
	}
	c.sched = sched
	q, ok := sched.SchedulingQueue.(*internalqueue.PriorityQueue)
	if !ok {
		cancel()
		return nil, fmt.Errorf("unexpected scheduling queue type %T", sched.SchedulingQueue)
	}
	c.queue = q
	sched.SchedulingQueue = doneHook{SchedulingQueue: sched.SchedulingQueue, done: c.wake}
	c.assumed = &assumeHook{Cache: sched.Cache, pods: map[types.UID]*v1.Pod{}}
	sched.Cache = c.assumed
	c.holdPops()
	c.fw = sched.Profiles[v1.DefaultSchedulerName]
	if c.fw == nil {
		cancel()
		return nil, fmt.Errorf("no %s profile", v1.DefaultSchedulerName)
	}
	// The disruption controller's side is the PDB lister the preemption plugin reads: count its
	// events too, so a budget's new status is known to have reached that lister.
	if _, err := c.factory.Policy().V1().PodDisruptionBudgets().Informer().AddEventHandler(c.counts.handler(pdbsGVR, nil)); err != nil {
		cancel()
		return nil, err
	}
	// The PodGroup lister (GenericWorkload): the scheduler's handlers are counted through the
	// wrapped factory, but the plugins read the lister; count it too.
	if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		if _, err := c.factory.Scheduling().V1beta1().PodGroups().Informer().AddEventHandler(c.counts.handler(podGroupsGVR, nil)); err != nil {
			cancel()
			return nil, err
		}
	}
	// Likewise the namespace lister (InterPodAffinity reads namespace labels).
	if _, err := c.factory.Core().V1().Namespaces().Informer().AddEventHandler(c.counts.handler(namespacesGVR, nil)); err != nil {
		cancel()
		return nil, err
	}
	c.factory.Start(ctx.Done())
	if err := c.waitSynced(); err != nil {
		c.close()
		return nil, err
	}
	// Upstream draws from math/rand's global source (the preemption candidates' starting offset,
	// metrics sampling, selectHost's tie-break when extenders score). Seeded (main.go turns GODEBUG
	// randseednop off), and with attempts one at a time, a cluster gets the same answer on every
	// run. See orderNodes for what the seed changes.
	rand.Seed(seed) //nolint:staticcheck // deprecated, but the only handle on the global source
	c.seed = seed
	c.shuffle = rand.New(rand.NewSource(seed))
	c.runDone = make(chan struct{})
	go func() {
		defer close(c.runDone)
		sched.Run(ctx)
	}()
	return c, nil
}

// holdPops wraps the scheduler's NextEntity (its queue's Pop) so that the scheduling loop only
// asks the queue for a pod when the gate is open, the queue has one to give and the previous
// attempt has fully played out.
//
//   - The gate: `podsched simulate` creates all of a file's objects and then schedules; a scheduler
//     running while the pods arrive one by one would take the first pod before the others (of maybe
//     higher priority) exist. So the gate is closed while a file is applied and opens once the
//     scheduler's handlers have seen all of it; and the loop never waits inside Pop, where a newly
//     added pod would be handed over at once.
//   - One attempt at a time (settled): upstream binds in a goroutine and actuates preemption in
//     another (SchedulerAsyncPreemption), so the next scheduling cycle may start before the API
//     has seen the last one's bind or deletions. With real API latency that overlap is real, but
//     here it would be a race decided by goroutine timing: results would vary from run to run.
//     Waiting until the bind or the victims' deletions are done and their watch events handled
//     makes every attempt see the cluster as a fast API server would show it, as simulate does.
func (c *cluster) holdPops() {
	pop := c.sched.NextEntity
	c.sched.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		// The scheduling loop asks for the next pod only once ScheduleOne has returned: the failure
		// handler, which calls Done before it patches the pod's status, has finished too.
		c.attempting.Store(false)
		c.current.Store(map[objectKey]bool{})
		c.wake()
		for {
			if c.ctx.Err() != nil {
				return nil, nil
			}
			if c.gate.Load() && c.poppable() && c.settled() {
				c.tick()
				entity, err := pop(logger)
				// A pod, or every queued pod of a pod group (GenericWorkload): its scheduling cycle
				// writes to them all (their nominations, their binds).
				current := map[objectKey]bool{}
				if entity != nil {
					entity.ForEachPodInfo(func(info *framework.QueuedPodInfo) bool {
						if info.Pod != nil {
							current[objectKey{info.Pod.Namespace, info.Pod.Name}] = true
						}
						return true
					})
				}
				c.current.Store(current)
				c.attempting.Store(true)
				return entity, err
			}
			t := time.NewTimer(time.Millisecond) // queue moves that nothing announces (backoff flush)
			select {
			case <-c.ctx.Done():
			case <-c.kick:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// holdWrite delays the scheduler's writes to pods other than the one in the current scheduling
// attempt until that attempt is over. Asynchronous preemption (SchedulerAsyncPreemption, beta, on)
// starts a goroutine in PostFilter that patches and deletes the victims while the preemptor's own
// attempt goes on to its failure handling, which decides from the events seen so far whether the
// preemptor goes back to the queue at once or waits in the unschedulable pool. With a real API
// server the victims' calls take milliseconds and the failure handling microseconds, so the
// preemptor is nearly always parked first; here both are memory operations and the order would be
// decided by goroutine timing. Holding the victims' writes makes it the usual order every time.
//
// A write the attempt itself waits for (none in 1.37: the scheduling cycle writes only to its own
// pod) would wait forever, so a hold ends after a second of wall time whatever happens.
func (c *cluster) holdWrite(k objectKey) {
	deadline := time.Now().Add(time.Second)
	for c.attempting.Load() && time.Now().Before(deadline) {
		if cur, _ := c.current.Load().(map[objectKey]bool); cur[k] || c.ctx.Err() != nil {
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// tick moves the simulated clock by a nanosecond: once per object created and per scheduling
// attempt. The queue orders pods of equal priority by the time they were (re)queued; on a frozen
// clock those would all tie and the heap would order them arbitrarily, where a real cluster, whose
// clock moves, takes them first come, first served (as simulate does). Stored times are whole
// seconds (apiServer.now), so the nanoseconds change nothing else.
func (c *cluster) tick() {
	c.clock.Step(time.Nanosecond)
}

// wake tells the waiting scheduling loop and the oracle's waits to look again.
func (c *cluster) wake() {
	for _, ch := range []chan struct{}{c.kick, c.idleKick} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// pause waits for a wake or d, whichever comes first.
func (c *cluster) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.idleKick:
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// assumeHook remembers the pods the scheduler assumes onto a node. The queue lets go of a pod
// (Done) before its binding cycle runs; the cache keeps it "assumed" until the bind's watch event
// confirms it (or the failed bind is forgotten), so an assumed pod is a binding still under way.
type assumeHook struct {
	internalcache.Cache
	mu   sync.Mutex
	pods map[types.UID]*v1.Pod
}

func (a *assumeHook) AssumePod(logger klog.Logger, pod *v1.Pod) error {
	err := a.Cache.AssumePod(logger, pod)
	if err == nil {
		a.mu.Lock()
		a.pods[pod.UID] = pod
		a.mu.Unlock()
	}
	return err
}

func (a *assumeHook) binding() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, pod := range a.pods {
		if assumed, err := a.Cache.IsAssumedPod(pod); err == nil && assumed {
			return true
		}
		delete(a.pods, uid)
	}
	return false
}

// doneHook wakes the waits when the queue lets go of a pod (as its binding cycle starts, or in its
// failure handling), which no watch event announces.
type doneHook struct {
	internalqueue.SchedulingQueue
	done func()
}

func (d doneHook) Done(uid types.UID) {
	d.SchedulingQueue.Done(uid)
	d.done()
}

// orderNodes decides the order in which a file's nodes are created (other objects keep their
// places and order). Which of several equally scored nodes upstream takes depends only on the order
// Filter listed them in (with no extender, nothing else breaks the tie), which at parallelism 1 is
// the scheduler cache's node order (by insertion, zones interleaved); with upstream's default 16
// Filter goroutines that order is effectively random, so any of the tied nodes is an answer
// upstream gives. Seed 1 keeps the file's order; any other seed shuffles the nodes with
// that seed, so running a cluster with several seeds shows the answers upstream can give.
func (c *cluster) orderNodes(manifests []manifest) {
	if c.seed == 1 {
		return
	}
	var places []int
	for i, m := range manifests {
		if _, ok := m.obj.(*v1.Node); ok {
			places = append(places, i)
		}
	}
	nodes := make([]manifest, len(places))
	for i, p := range places {
		nodes[i] = manifests[p]
	}
	c.shuffle.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	for i, p := range places {
		manifests[p] = nodes[i]
	}
}

// waitSynced waits for the informers' initial lists and the scheduler's handlers. Upstream's own
// waits poll every 100 ms, longer than a whole cluster takes here, so they are given 1 ms at a time.
func (c *cluster) waitSynced() error {
	deadline := time.Now().Add(settleTimeout)
	for {
		short, cancel := context.WithTimeout(c.ctx, time.Millisecond)
		synced := true
		for _, ok := range c.factory.WaitForCacheSync(short.Done()) {
			synced = synced && ok
		}
		if synced {
			synced = c.sched.WaitForHandlersSync(short) == nil
		}
		cancel()
		if synced {
			return nil
		}
		if c.ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("the informers did not sync within %s", settleTimeout)
		}
	}
}

func (c *cluster) close() {
	c.cancel()
	if c.runDone != nil {
		<-c.runDone
	}
	c.factory.Shutdown()
	c.api.stopWatchers()
}

// applyFile creates a file's objects in document order (each admitted as the apiserver would),
// then lets the scheduler run until nothing changes, as `podsched simulate -f` does per file.
func (c *cluster) applyFile(name string, data []byte) error {
	manifests, err := decodeFile(name, data)
	if err != nil {
		return err
	}
	c.gate.Store(false)
	c.orderNodes(manifests)
	for _, m := range manifests {
		obj, err := c.api.admit(m)
		if err != nil {
			return err
		}
		c.tick()
		if err := c.api.ensureNamespace(obj); err != nil {
			return err
		}
		if err := c.api.Add(obj); err != nil {
			return badInput("%s: %v", m.source, err)
		}
		// One at a time, so that each pod enters the queue at its own (ticked) time.
		if err := c.waitHandlers(); err != nil {
			return err
		}
	}
	c.gate.Store(true)
	c.wake()
	return c.settle()
}

// settle runs the scheduler until nothing changes. When it is idle, simulated time jumps to the
// next thing that can happen: the end of a victim's grace period (the kubelet then removes the
// pod) or, for a pod in error backoff, one second (backoffs are whole seconds; the queue's flush
// runs on the injected clock's ticker and releases the pod once its backoff is over).
// It stops when only unschedulable pods remain and nothing is terminating.
func (c *cluster) settle() error {
	// A pod that fails with an error on every attempt would be retried (with backoff) forever; once
	// a whole backoff period passes without a single write to the API, retrying changes nothing.
	quietSince := int64(-1)
	// retryingSince: when pods in error backoff started being retried with writes each time (pod groups
	// that take turns on the same nodes can do that forever: a livelock upstream too).
	var retryingSince time.Time
	flushWaits := 0
	for range 100000 {
		backoff, err := c.waitIdle()
		if err != nil {
			return err
		}
		now := c.clock.Now()
		next, terminating := c.api.nextTermination()
		version := c.api.version()
		switch {
		case backoff && flushWaits < 20 && c.backoffFlushPending():
			// Give the queue's flush goroutine its turn; if it had its tick before the entity came
			// back (a stored expiration already past), only the next tick moves it: step on.
			flushWaits++
			c.pause(time.Millisecond)
			continue
		case backoff && !terminating && quietSince == version && c.backoffOver():
			return nil
		case backoff && (!terminating || next.After(now.Add(time.Second))):
			next = now.Add(time.Second)
			if retryingSince.IsZero() {
				retryingSince = now
			}
			if now.Sub(retryingSince) > livelockAfter {
				return fmt.Errorf("livelock: pods in error backoff were retried for %s of simulated time and "+
					"their retries kept changing the API: %s", livelockAfter, c.describe())
			}
			if quietSince != version {
				quietSince = version
				c.backoffFrom = now
			}
		case !terminating:
			return nil
		default:
			quietSince = -1
			retryingSince = time.Time{}
		}
		flushWaits = 0
		if next.After(now) {
			c.clock.SetTime(next)
		}
		c.api.reap(c.clock.Now())
		c.flushUnschedulableLeftover()
	}
	return fmt.Errorf("the cluster did not settle after 100000 time steps")
}

// backoffOver: the longest backoff (podMaxBackoffSeconds, 10 s by default; for a pod group upstream
// multiplies it by the square root of the group's size, calculateBackoffDuration) has passed since
// the last write, so every entity in error backoff has had a retry since, and none wrote anything.
func (c *cluster) backoffOver() bool {
	longest := 10 * time.Second
	for _, size := range c.backoffSizes() {
		if d := time.Duration(float64(10*time.Second) * math.Sqrt(float64(size))); d > longest {
			longest = d
		}
	}
	return c.clock.Since(c.backoffFrom) > longest+time.Second
}

// backoffExpirations: when each entity in backoffQ completes its backoff. The queue computes it
// lazily; until then, the latest it can be: the entity's timestamp plus the longest backoff, which
// for a pod group upstream multiplies by the square root of its size (calculateBackoffDuration).
func (c *cluster) backoffExpirations() []time.Time {
	var out []time.Time
	for _, pod := range c.queue.PodsInBackoffQ() {
		var info interface {
			GetBackoffExpiration() time.Time
			GetTimestamp() time.Time
			Size() int
		}
		if group := pod.Spec.SchedulingGroup; group != nil && group.PodGroupName != nil {
			if pg, ok := c.queue.GetPodGroup(*group.PodGroupName, pod.Namespace, fwk.PodGroupKeyType); ok {
				info = pg
			}
		} else if p, ok := c.queue.GetPod(pod.Name, pod.Namespace, nil); ok {
			info = p
		}
		if info == nil {
			continue
		}
		expiration := info.GetBackoffExpiration()
		if expiration.IsZero() {
			longest := time.Duration(float64(10*time.Second) * math.Sqrt(float64(max(info.Size(), 1))))
			expiration = info.GetTimestamp().Add(longest)
		}
		out = append(out, expiration)
	}
	return out
}

// backoffSizes: the size of each entity in backoffQ (a pod: 1).
func (c *cluster) backoffSizes() []int {
	var out []int
	for _, pod := range c.queue.PodsInBackoffQ() {
		size := 1
		if group := pod.Spec.SchedulingGroup; group != nil && group.PodGroupName != nil {
			if pg, ok := c.queue.GetPodGroup(*group.PodGroupName, pod.Namespace, fwk.PodGroupKeyType); ok {
				size = pg.Size()
			}
		}
		out = append(out, size)
	}
	return out
}

// backoffFlushPending: an entity's backoff is over (its ordering window too) but the queue's flush,
// which runs in its own goroutine on the clock's ticks, has not moved it yet. Moving the clock on
// would race that goroutine; waiting for it keeps every retry at the time upstream makes it.
func (c *cluster) backoffFlushPending() bool {
	now := c.clock.Now()
	for _, expiration := range c.backoffExpirations() {
		if now.After(expiration.Add(time.Second)) {
			return true
		}
	}
	return false
}

// flushUnschedulableLeftover does what the queue's flushUnschedulableEntitiesLeftover does, at the
// moments `podsched simulate` does it. Upstream runs that flush every 30 s of wall time (wait.Until,
// not the injected clock), so on a simulated clock it would never run at all. simulate instead
// retries, after each jump of simulated time, the pods that have waited in the unschedulable pool
// longer than podMaxInUnschedulablePodsDuration (5 min); the oracle does the same so that both
// sides are compared under one rule. It only matters when grace periods add up to more than 5
// minutes: otherwise no pod waits that long.
func (c *cluster) flushUnschedulableLeftover() {
	now := c.clock.Now()
	move := sets.New[string]()
	for _, pod := range c.queue.UnschedulablePods() {
		info, ok := c.queue.GetPod(pod.Name, pod.Namespace, nil)
		if !ok {
			continue
		}
		last := info.GetTimestamp()
		if flushed := info.GetFlushTimestamp(); flushed.After(last) {
			last = flushed
		}
		if now.Sub(last) > podMaxInUnschedulablePodsDuration {
			info.SetWasFlushedFromUnschedulable(true)
			info.SetFlushTimestamp(now)
			move.Insert(pod.Namespace + "/" + pod.Name)
		}
	}
	if move.Len() == 0 {
		return
	}
	c.queue.MoveAllToActiveOrBackoffQueue(c.logger, framework.EventUnschedulableTimeout, nil, nil, func(pod *v1.Pod) bool {
		return move.Has(pod.Namespace + "/" + pod.Name)
	})
}

// waitIdle waits until the scheduler is idle: every watch event has been handled by every
// scheduler event handler (and the PDB and namespace listers), no pod is in a scheduling cycle or
// being bound, no asynchronous preemption is still issuing its API calls, and Pop has nothing to
// give. Backoff needs no clock for most pods (Pop takes them from backoffQ when activeQ is
// empty); pods waiting out an error backoff are reported (true) so settle moves the clock for them.
func (c *cluster) waitIdle() (bool, error) {
	deadline := time.Now().Add(settleTimeout)
	for {
		if quiet, backoff := c.quiet(); quiet {
			c.logger.V(4).Info("oracle: idle", "backoff", backoff, "state", c.describe())
			return backoff, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("the scheduler did not become idle within %s: %s", settleTimeout, c.describe())
		}
		c.pause(time.Millisecond)
	}
}

// waitHandlers waits until the scheduler's handlers have seen every change made so far.
func (c *cluster) waitHandlers() error {
	deadline := time.Now().Add(settleTimeout)
	for !c.counts.caughtUp(c.api) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the scheduler's event handlers did not catch up within %s: %s", settleTimeout, c.counts.describe(c.api))
		}
		c.pause(time.Millisecond)
	}
	return nil
}

// settled: every change is in the scheduler's cache and queue, no pod is in a scheduling cycle, no
// bind is under way, and no asynchronous preemption is still issuing API calls.
func (c *cluster) settled() bool {
	if c.attempting.Load() || !c.counts.caughtUp(c.api) || len(c.queue.InFlightPods()) > 0 || c.assumed.binding() || c.preempting() {
		return false
	}
	// Read the counts again: the checks above may have raced with a handler still running.
	return c.counts.caughtUp(c.api)
}

// backoffQ sorts the pods in backoffQ: Pop takes pods from its main heap when activeQ is empty
// (SchedulerPopFromBackoffQ, beta, on), but not from its error heap (pods whose last attempt failed
// with an error, i.e. no plugin rejected them); those leave only when their backoff expires.
//
// A pod group's pods (GenericWorkload) are in backoffQ as one entity, sorted by the group's own
// plugins, not its pods'.
func (c *cluster) backoffQ() (poppable, errored int) {
	for _, pod := range c.queue.PodsInBackoffQ() {
		if group := pod.Spec.SchedulingGroup; group != nil && group.PodGroupName != nil {
			if info, ok := c.queue.GetPodGroup(*group.PodGroupName, pod.Namespace, fwk.PodGroupKeyType); ok {
				if info.GetUnschedulablePlugins().Len() == 0 && info.GetPendingPlugins().Len() == 0 {
					errored++
				} else {
					poppable++
				}
				continue
			}
		}
		info, ok := c.queue.GetPod(pod.Name, pod.Namespace, nil)
		if ok && info.UnschedulablePlugins.Len() == 0 && info.PendingPlugins.Len() == 0 {
			errored++
		} else {
			poppable++
		}
	}
	return poppable, errored
}

// poppable: Pop would return a pod at once.
func (c *cluster) poppable() bool {
	if len(c.queue.PodsInActiveQ()) > 0 {
		return true
	}
	poppable, _ := c.backoffQ()
	return poppable > 0
}

// quiet: settled and nothing Pop would return; backoff tells whether pods wait out an error
// backoff. The queue's flush goroutine moves pods from backoffQ to activeQ at any moment, so
// backoffQ is read before activeQ: a pod moving in between is seen in backoffQ.
func (c *cluster) quiet() (quiet bool, backoff bool) {
	if !c.settled() {
		return false, false
	}
	poppable, errored := c.backoffQ()
	if poppable > 0 || len(c.queue.PodsInActiveQ()) > 0 || !c.settled() {
		return false, false
	}
	return true, errored > 0
}

// preempting tells whether an asynchronous preemption (SchedulerAsyncPreemption, beta, on) is still
// under way: its goroutine outlives the preemptor's scheduling cycle, and while it runs the
// DefaultPreemption plugin's PreEnqueue holds the preemptor back. That PreEnqueue is the only
// public view of it, so ask it about every pending pod.
func (c *cluster) preempting() bool {
	var gates []fwk.PreEnqueuePlugin
	for _, pl := range c.fw.PreEnqueuePlugins() {
		if pl.Name() == "DefaultPreemption" {
			gates = append(gates, pl)
		}
	}
	if len(gates) == 0 {
		return false
	}
	for _, pod := range c.api.pods() {
		if pod.Spec.NodeName != "" || pod.Spec.SchedulerName != v1.DefaultSchedulerName {
			continue
		}
		for _, pl := range gates {
			if st := pl.PreEnqueue(c.ctx, pod); !st.IsSuccess() {
				return true
			}
		}
	}
	return false
}

func (c *cluster) describe() string {
	return fmt.Sprintf("handlers %s, activeQ %d, backoffQ %d, in flight %d, preempting %v",
		c.counts.describe(c.api), len(c.queue.PodsInActiveQ()), len(c.queue.PodsInBackoffQ()),
		len(c.queue.InFlightPods()), c.preempting())
}

// result is what the scheduler decided, plus each pod's final state.
func (c *cluster) result() result {
	return c.api.log.result()
}

// runFiles runs one cluster from its files, in order, on a fresh clientset and scheduler.
func runFiles(ctx context.Context, files []namedFile, seed int64, gates map[string]bool) (result, error) {
	c, err := newCluster(ctx, seed, gates)
	if err != nil {
		return result{}, err
	}
	defer c.close()
	for _, f := range files {
		if err := c.applyFile(f.name, f.data); err != nil {
			return result{}, err
		}
	}
	return c.result(), nil
}

type namedFile struct {
	name string
	data []byte
}
