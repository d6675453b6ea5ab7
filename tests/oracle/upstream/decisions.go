package main

// What the scheduler decided, as seen from the API (binds, nominations, victims) and from its
// Preempted events (which preemptor took which victim).

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

type podResult struct {
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	NodeName          string `json:"nodeName"`
	NominatedNodeName string `json:"nominatedNodeName"`
	Preempted         bool   `json:"preempted"`
	Deleted           bool   `json:"deleted"`
}

// Time is the simulated time of the decision, in seconds since the simulation started.
type placement struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Time      int64  `json:"time"`
}

type preemption struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	By        string `json:"by"`
	Time      int64  `json:"time"`
}

type result struct {
	ID          string       `json:"id,omitempty"`
	Upstream    string       `json:"upstream"`
	Pods        []podResult  `json:"pods"`
	Binds       []placement  `json:"binds"`
	Nominations []placement  `json:"nominations"`
	Preempted   []preemption `json:"preempted"`
}

// decisionLog has its own lock: the apiserver calls it under its lock, the event recorder from
// scheduler goroutines.
type decisionLog struct {
	clock       clock.PassiveClock
	mu          sync.Mutex
	pods        map[objectKey]*podResult
	binds       []placement
	nominations []placement
	preempted   []preemption
}

func newDecisionLog(c clock.PassiveClock) *decisionLog {
	return &decisionLog{clock: c, pods: map[objectKey]*podResult{}}
}

// now is in whole seconds: the clock's nanosecond ticks (cluster.tick) only order events.
func (l *decisionLog) now() int64 {
	return int64(l.clock.Since(epoch) / time.Second)
}

func (l *decisionLog) record(pod *v1.Pod) *podResult {
	k := objectKey{pod.Namespace, pod.Name}
	r, ok := l.pods[k]
	if !ok {
		r = &podResult{Namespace: pod.Namespace, Name: pod.Name}
		l.pods[k] = r
	}
	r.NodeName = pod.Spec.NodeName
	r.NominatedNodeName = pod.Status.NominatedNodeName
	return r
}

func (l *decisionLog) podCreated(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(pod)
}

func (l *decisionLog) podState(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(pod)
}

func preemptedCondition(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

func (l *decisionLog) podUpdated(old, pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.record(pod)
	if nnn := pod.Status.NominatedNodeName; nnn != "" && nnn != old.Status.NominatedNodeName {
		l.nominations = append(l.nominations, placement{pod.Namespace, pod.Name, nnn, l.now()})
	}
	if preemptedCondition(pod) {
		r.Preempted = true
	}
}

func (l *decisionLog) podBound(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.binds = append(l.binds, placement{pod.Namespace, pod.Name, pod.Spec.NodeName, l.now()})
}

func (l *decisionLog) podDeletedByScheduler(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(pod).Preempted = true
}

func (l *decisionLog) podRemoved(pod *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(pod).Deleted = true
}

func (l *decisionLog) victim(victim *v1.Pod, by string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.preempted = append(l.preempted, preemption{victim.Namespace, victim.Name, victim.Spec.NodeName, by, l.now()})
}

func (l *decisionLog) result() result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := result{
		Upstream:    upstreamVersion,
		Pods:        make([]podResult, 0, len(l.pods)),
		Binds:       append([]placement{}, l.binds...),
		Nominations: append([]placement{}, l.nominations...),
		Preempted:   append([]preemption{}, l.preempted...),
	}
	for _, p := range l.pods {
		r.Pods = append(r.Pods, *p)
	}
	sort.Slice(r.Pods, func(i, j int) bool {
		if r.Pods[i].Namespace != r.Pods[j].Namespace {
			return r.Pods[i].Namespace < r.Pods[j].Namespace
		}
		return r.Pods[i].Name < r.Pods[j].Name
	})
	return r
}

// recorder is the scheduler's event recorder: it keeps the Preempted events (victim, preemptor)
// and drops the rest (nothing reads events back from the API here).
type recorder struct{ log *decisionLog }

var _ events.EventRecorderLogger = recorder{}

func (r recorder) Eventf(regarding runtime.Object, related runtime.Object, _, reason, _, _ string, _ ...interface{}) {
	if reason != "Preempted" {
		return
	}
	victim, ok := regarding.(*v1.Pod)
	if !ok {
		return
	}
	by := ""
	if m, err := meta.Accessor(related); err == nil {
		by = m.GetNamespace() + "/" + m.GetName()
	}
	r.log.victim(victim, by)
}

func (r recorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }
