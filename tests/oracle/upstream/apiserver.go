package main

// The oracle's stand-in for kube-apiserver, the disruption controller and the kubelet.
//
// It implements client-go's testing.ObjectTracker so that testing.ObjectReaction (the fake
// clientset's own get/list/create/update/patch/delete logic, strategic merge patch included) runs on
// top of it. A tracker of our own instead of the stock one, because the oracle must know exactly
// what the scheduler has seen: every stored object carries a resourceVersion, every watch event is
// counted (see idle.go), and watch channels are unbounded (the stock fake watcher panics when 100
// events are not drained in time, which a slow machine can hit).

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	pdbsGVR       = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	classesGVR    = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	podGroupsGVR  = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	defaultName   = "default-scheduler"
)

type objectKey struct{ namespace, name string }

func (k objectKey) String() string { return k.namespace + "/" + k.name }

// apiServer stores objects and serves the fake clientset. One mutex guards everything: the
// scheduler's API calls are few and short.
type apiServer struct {
	mu       sync.Mutex
	clock    *testingclock.FakeClock
	rv       int64
	uid      int64
	objects  map[schema.GroupVersionResource]map[objectKey]runtime.Object
	watchers map[schema.GroupVersionResource][]*watcher
	// emitted counts the watch events sent per resource (idle.go compares it with what the
	// scheduler's event handlers have processed).
	emitted map[schema.GroupVersionResource]int64
	log     *decisionLog
}

func newAPIServer(clock *testingclock.FakeClock) *apiServer {
	return &apiServer{
		clock:    clock,
		objects:  map[schema.GroupVersionResource]map[objectKey]runtime.Object{},
		watchers: map[schema.GroupVersionResource][]*watcher{},
		emitted:  map[schema.GroupVersionResource]int64{},
		log:      newDecisionLog(clock),
	}
}

var _ clienttesting.ObjectTracker = (*apiServer)(nil)

// install makes the fake clientset use this server for every verb and every watch. Our reactors
// are prepended, so the clientset's own tracker is never consulted.
func (s *apiServer) install(cs *clienttesting.Fake) {
	cs.PrependReactor("*", "*", clienttesting.ObjectReaction(s))
	// Prepended after, so it runs first: pods/binding is a subresource ObjectReaction cannot store.
	cs.PrependReactor("create", "pods", s.bindReactor)
	cs.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := s.Watch(action.GetResource(), action.GetNamespace(), opts)
		return true, w, err
	})
}

func keyOf(obj runtime.Object) (objectKey, metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return objectKey{}, nil, err
	}
	return objectKey{m.GetNamespace(), m.GetName()}, m, nil
}

func gvrOf(obj runtime.Object) (schema.GroupVersionResource, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
	return gvr, nil
}

// --- ObjectTracker ---------------------------------------------------------------------------

func (s *apiServer) Add(obj runtime.Object) error {
	gvr, err := gvrOf(obj)
	if err != nil {
		return err
	}
	_, m, err := keyOf(obj)
	if err != nil {
		return err
	}
	return s.Create(gvr, obj, m.GetNamespace())
}

func (s *apiServer) Get(gvr schema.GroupVersionResource, ns, name string, _ ...metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[gvr][objectKey{ns, name}]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return obj.DeepCopyObject(), nil
}

func (s *apiServer) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, _ ...metav1.ListOptions) (runtime.Object, error) {
	listGVK := gvk
	listGVK.Kind += "List"
	list, err := scheme.Scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []runtime.Object
	for _, k := range s.sortedKeys(gvr) {
		if ns == "" || k.namespace == ns {
			items = append(items, s.objects[gvr][k].DeepCopyObject())
		}
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	if lm, err := meta.ListAccessor(list); err == nil {
		lm.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	}
	return list, nil
}

func (s *apiServer) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.CreateOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createLocked(gvr, obj, ns)
}

func (s *apiServer) createLocked(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	obj = obj.DeepCopyObject()
	k, m, err := keyOf(obj)
	if err != nil {
		return err
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
		k.namespace = ns
	}
	if s.objects[gvr] == nil {
		s.objects[gvr] = map[objectKey]runtime.Object{}
	}
	if _, exists := s.objects[gvr][k]; exists {
		return apierrors.NewAlreadyExists(gvr.GroupResource(), m.GetName())
	}
	if m.GetUID() == "" {
		s.uid++
		m.SetUID(types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", s.uid)))
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(s.now(0))
	}
	s.store(gvr, k, obj, watch.Added)
	if pod, ok := obj.(*v1.Pod); ok {
		s.log.podCreated(pod)
		s.refreshPDBs(pod.Namespace)
	}
	if gvr == pdbsGVR {
		s.refreshPDBs(k.namespace)
	}
	return nil
}

func (s *apiServer) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.UpdateOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateLocked(gvr, obj, ns)
}

// Patch receives the object ObjectReaction already patched.
func (s *apiServer) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.PatchOptions) error {
	return s.Update(gvr, obj, ns)
}

func (s *apiServer) updateLocked(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	obj = obj.DeepCopyObject()
	k, m, err := keyOf(obj)
	if err != nil {
		return err
	}
	if k.namespace == "" {
		m.SetNamespace(ns)
		k.namespace = ns
	}
	old, ok := s.objects[gvr][k]
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), k.name)
	}
	if oldPod, ok := old.(*v1.Pod); ok {
		newPod := obj.(*v1.Pod)
		// The apiserver keeps deletion metadata: a status patch cannot undo a graceful deletion.
		newPod.DeletionTimestamp = oldPod.DeletionTimestamp
		newPod.DeletionGracePeriodSeconds = oldPod.DeletionGracePeriodSeconds
		s.log.podUpdated(oldPod, newPod)
	}
	s.store(gvr, k, obj, watch.Modified)
	if pod, ok := obj.(*v1.Pod); ok {
		s.refreshPDBs(pod.Namespace)
	}
	return nil
}

func (s *apiServer) Apply(gvr schema.GroupVersionResource, _ runtime.Object, _ string, _ ...metav1.PatchOptions) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the oracle's apiserver does not serve server-side apply (%s)", gvr.Resource))
}

// Delete is only ever called by the scheduler (the oracle's own removals use removeLocked): for
// pods it is the preemption of a victim, deleted gracefully as the apiserver does.
func (s *apiServer) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := objectKey{ns, name}
	obj, ok := s.objects[gvr][k]
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	pod, isPod := obj.(*v1.Pod)
	if !isPod {
		s.removeLocked(gvr, k)
		return nil
	}
	s.log.podDeletedByScheduler(pod)
	if pod.DeletionTimestamp != nil {
		return nil
	}
	// Graceful deletion as the pod REST strategy does it (CheckGracefulDelete): the grace period is
	// the request's, else the pod's terminationGracePeriodSeconds; a pod not on a node or already
	// finished is removed at once.
	grace := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if len(opts) > 0 && opts[0].GracePeriodSeconds != nil {
		grace = *opts[0].GracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		grace = 0
	}
	if grace <= 0 {
		s.removeLocked(gvr, k)
		return nil
	}
	pod = pod.DeepCopy()
	deadline := s.now(time.Duration(grace) * time.Second)
	pod.DeletionTimestamp = &deadline
	pod.DeletionGracePeriodSeconds = &grace
	s.store(gvr, k, pod, watch.Modified)
	s.log.podState(pod)
	s.refreshPDBs(ns)
	return nil
}

func (s *apiServer) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := int64(0)
	if len(opts) > 0 && opts[0].ResourceVersion != "" {
		rv, err := strconv.ParseInt(opts[0].ResourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest("invalid resourceVersion " + opts[0].ResourceVersion)
		}
		from = rv
	}
	w := newWatcher(ns)
	s.watchers[gvr] = append(s.watchers[gvr], w)
	for _, k := range s.sortedKeys(gvr) {
		obj := s.objects[gvr][k]
		if (ns == "" || k.namespace == ns) && resourceVersion(obj) > from {
			w.push(watch.Event{Type: watch.Added, Object: obj.DeepCopyObject()})
			s.emitted[gvr]++
		}
	}
	return w, nil
}

func (s *apiServer) IsWatchListSemanticsUnSupported() bool { return true }

// ensureNamespace creates the namespace of a namespaced object if it does not exist yet, labelled
// kubernetes.io/metadata.name as the apiserver labels every namespace. A real apiserver would
// reject the object instead; manifests of a whole cluster rarely list their namespaces, and
// `podsched simulate` takes them without, so the oracle does too.
func (s *apiServer) ensureNamespace(obj runtime.Object) error {
	_, m, err := keyOf(obj)
	if err != nil || m.GetNamespace() == "" {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[namespacesGVR][objectKey{"", m.GetNamespace()}]; ok {
		return nil
	}
	ns := &v1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: m.GetNamespace(), Labels: map[string]string{v1.LabelMetadataName: m.GetNamespace()}},
		Status:     v1.NamespaceStatus{Phase: v1.NamespaceActive},
	}
	return s.createLocked(namespacesGVR, ns, "")
}

// --- internals ---------------------------------------------------------------------------------

// now (plus d) as the apiserver stores times: whole seconds (RFC 3339 on the wire). The simulated
// clock itself also moves by nanoseconds (see cluster.tick), which stored objects must not show.
func (s *apiServer) now(d time.Duration) metav1.Time {
	return metav1.NewTime(s.clock.Now().Add(d).Truncate(time.Second))
}

func resourceVersion(obj runtime.Object) int64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return rv
}

func (s *apiServer) sortedKeys(gvr schema.GroupVersionResource) []objectKey {
	keys := make([]objectKey, 0, len(s.objects[gvr]))
	for k := range s.objects[gvr] {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// store saves obj under a new resourceVersion and tells the watchers.
func (s *apiServer) store(gvr schema.GroupVersionResource, k objectKey, obj runtime.Object, kind watch.EventType) {
	s.rv++
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	}
	s.objects[gvr][k] = obj
	s.notify(gvr, k.namespace, watch.Event{Type: kind, Object: obj})
}

func (s *apiServer) removeLocked(gvr schema.GroupVersionResource, k objectKey) {
	obj, ok := s.objects[gvr][k]
	if !ok {
		return
	}
	delete(s.objects[gvr], k)
	s.rv++
	obj = obj.DeepCopyObject()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	}
	s.notify(gvr, k.namespace, watch.Event{Type: watch.Deleted, Object: obj})
	if pod, ok := obj.(*v1.Pod); ok {
		s.log.podRemoved(pod)
		s.refreshPDBs(pod.Namespace)
	}
}

func (s *apiServer) notify(gvr schema.GroupVersionResource, ns string, ev watch.Event) {
	live := s.watchers[gvr][:0]
	for _, w := range s.watchers[gvr] {
		if w.isStopped() {
			continue
		}
		live = append(live, w)
		if w.namespace == "" || w.namespace == ns {
			w.push(watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()})
			s.emitted[gvr]++
		}
	}
	s.watchers[gvr] = live
}

// version is the last resourceVersion handed out: it changes with every write.
func (s *apiServer) version() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

func (s *apiServer) emittedCount(gvr schema.GroupVersionResource) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitted[gvr]
}

func (s *apiServer) stopWatchers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.watchers {
		for _, w := range ws {
			w.Stop()
		}
	}
	s.watchers = map[schema.GroupVersionResource][]*watcher{}
}

// bindReactor serves POST pods/{name}/binding: the apiserver sets spec.nodeName and the PodScheduled
// condition and (ClearingNominatedNodeNameAfterBinding, beta and on in 1.37) clears
// status.nominatedNodeName; the kubelet then starts the pod at once (phase Running, startTime now).
// Both land as one write.
func (s *apiServer) bindReactor(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateActionImpl)
	if !ok || action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	binding, ok := create.GetObject().(*v1.Binding)
	if !ok {
		return true, nil, apierrors.NewBadRequest("pods/binding takes a Binding")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := objectKey{action.GetNamespace(), binding.Name}
	obj, ok := s.objects[podsGVR][k]
	if !ok {
		return true, nil, apierrors.NewNotFound(podsGVR.GroupResource(), binding.Name)
	}
	pod := obj.(*v1.Pod).DeepCopy()
	if pod.DeletionTimestamp != nil {
		return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), binding.Name, fmt.Errorf("pod is being deleted"))
	}
	if pod.Spec.NodeName != "" {
		return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), binding.Name,
			fmt.Errorf("pod %s is already assigned to node %q", binding.Name, pod.Spec.NodeName))
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return true, nil, apierrors.NewBadRequest("binding target must be a Node")
	}
	old := pod.DeepCopy()
	now := s.now(0)
	pod.Spec.NodeName = binding.Target.Name
	pod.Status.NominatedNodeName = ""
	setCondition(&pod.Status, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: now})
	pod.Status.Phase = v1.PodRunning
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &now
	}
	s.log.podBound(pod)
	s.log.podUpdated(old, pod)
	s.store(podsGVR, k, pod, watch.Modified)
	s.refreshPDBs(pod.Namespace)
	return true, binding, nil
}

func setCondition(status *v1.PodStatus, c v1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// nextTermination is the earliest deletionTimestamp of a pod being deleted (the kubelet removes
// it then), or false when no pod is terminating.
func (s *apiServer) nextTermination() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	found := false
	for _, obj := range s.objects[podsGVR] {
		pod := obj.(*v1.Pod)
		if pod.DeletionTimestamp != nil && (!found || pod.DeletionTimestamp.Time.Before(next)) {
			next, found = pod.DeletionTimestamp.Time, true
		}
	}
	return next, found
}

// reap plays the kubelet: pods whose grace period has ended are gone (in name order, for the same
// watch event order on every run).
func (s *apiServer) reap(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.sortedKeys(podsGVR) {
		pod := s.objects[podsGVR][k].(*v1.Pod)
		if pod.DeletionTimestamp != nil && !pod.DeletionTimestamp.Time.After(now) {
			s.removeLocked(podsGVR, k)
		}
	}
}

// pods returns the stored pods (never modified in place: every write stores a new object).
func (s *apiServer) pods() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.objects[podsGVR]))
	for _, k := range s.sortedKeys(podsGVR) {
		out = append(out, s.objects[podsGVR][k].(*v1.Pod))
	}
	return out
}

func (s *apiServer) get(gvr schema.GroupVersionResource, k objectKey) (runtime.Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[gvr][k]
	return obj, ok
}

// refreshPDBs plays the disruption controller for one namespace: each budget's status from the pods
// it selects, written (as a new version) only when it changed.
//
// As upstream's controller does for pods without a workload controller (bare pods, the only kind
// here): an integer minAvailable expects the matching pods; maxUnavailable and a percentage
// minAvailable need the controllers' scale, which bare pods do not have, so 0 pods are expected and
// no disruption is allowed. currentHealthy counts matching pods that are Running and not being
// deleted (no kubelet readiness here: a started pod is ready).
func (s *apiServer) refreshPDBs(ns string) {
	for _, k := range s.sortedKeys(pdbsGVR) {
		if k.namespace != ns {
			continue
		}
		pdb := s.objects[pdbsGVR][k].(*policyv1.PodDisruptionBudget)
		status := s.pdbStatus(pdb)
		if equalPDBStatus(pdb.Status, status) {
			continue
		}
		pdb = pdb.DeepCopy()
		pdb.Status = status
		s.store(pdbsGVR, k, pdb, watch.Modified)
	}
}

func (s *apiServer) pdbStatus(pdb *policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudgetStatus {
	var matching []*v1.Pod
	if pdb.Spec.Selector != nil {
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil {
			for _, obj := range s.objects[podsGVR] {
				pod := obj.(*v1.Pod)
				if pod.Namespace == pdb.Namespace && selector.Matches(labels.Set(pod.Labels)) {
					matching = append(matching, pod)
				}
			}
		}
	}
	healthy := int32(0)
	for _, pod := range matching {
		if pod.DeletionTimestamp == nil && pod.Status.Phase == v1.PodRunning {
			healthy++
		}
	}
	var expected, desired int32
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected = 0
		maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		desired = max(0, expected-int32(maxUnavailable))
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		expected = int32(len(matching))
		desired = pdb.Spec.MinAvailable.IntVal
	case pdb.Spec.MinAvailable != nil:
		expected = 0
		minAvailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		desired = int32(minAvailable)
	}
	allowed := healthy - desired
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	return policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		ExpectedPods:       expected,
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		DisruptionsAllowed: allowed,
	}
}

func equalPDBStatus(a, b policyv1.PodDisruptionBudgetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.ExpectedPods == b.ExpectedPods &&
		a.CurrentHealthy == b.CurrentHealthy && a.DesiredHealthy == b.DesiredHealthy &&
		a.DisruptionsAllowed == b.DisruptionsAllowed
}

// --- watch -------------------------------------------------------------------------------------

// watcher is a watch.Interface with an unbounded buffer: push never blocks the apiserver.
type watcher struct {
	namespace string
	mu        sync.Mutex
	cond      *sync.Cond
	queue     []watch.Event
	stopped   bool
	done      chan struct{}
	ch        chan watch.Event
}

func newWatcher(ns string) *watcher {
	w := &watcher{namespace: ns, done: make(chan struct{}), ch: make(chan watch.Event)}
	w.cond = sync.NewCond(&w.mu)
	go w.pump()
	return w
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.queue = append(w.queue, ev)
		w.cond.Signal()
	}
}

func (w *watcher) pump() {
	defer close(w.ch)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		ev := w.queue[0]
		w.queue[0] = watch.Event{}
		w.queue = w.queue[1:]
		w.mu.Unlock()
		select {
		case w.ch <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *watcher) isStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

func (w *watcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		close(w.done)
		w.cond.Broadcast()
	}
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.ch }
