package main

// Knowing when the scheduler has seen everything.
//
// The scheduler learns of pods and nodes through its informer event handlers, which run on informer
// goroutines. To know that it has processed every change, the oracle hands scheduler.New an informer
// factory that wraps the pod and node informers: each handler the scheduler registers is wrapped to
// count the notifications it has finished. The apiserver counts the watch events it sent; with one
// watch per resource (no relists: the watches never end), each handler receives exactly one
// notification per event, so "handled == emitted" for every handler means all changes are in the
// scheduler's cache and queue. Everything else passes through unchanged.

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	schedulinginformers "k8s.io/client-go/informers/scheduling"
	schedulingv1beta1informers "k8s.io/client-go/informers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
)

type handlerCounts struct {
	mu       sync.Mutex
	handlers map[schema.GroupVersionResource][]*atomic.Int64
	// after runs after every notification (it wakes the held scheduling loop).
	after func()
}

func newHandlerCounts(after func()) *handlerCounts {
	return &handlerCounts{handlers: map[schema.GroupVersionResource][]*atomic.Int64{}, after: after}
}

// handler wraps h (nil: a handler that does nothing) so that it counts finished notifications.
func (hc *handlerCounts) handler(gvr schema.GroupVersionResource, h cache.ResourceEventHandler) cache.ResourceEventHandler {
	n := &atomic.Int64{}
	hc.mu.Lock()
	hc.handlers[gvr] = append(hc.handlers[gvr], n)
	hc.mu.Unlock()
	if h == nil {
		h = cache.ResourceEventHandlerFuncs{}
	}
	return countingHandler{inner: h, n: n, after: hc.after}
}

// caughtUp: every counted handler has finished as many notifications as the apiserver sent events.
func (hc *handlerCounts) caughtUp(api *apiServer) bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for gvr, counters := range hc.handlers {
		emitted := api.emittedCount(gvr)
		for _, n := range counters {
			if n.Load() != emitted {
				return false
			}
		}
	}
	return true
}

func (hc *handlerCounts) describe(api *apiServer) string {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	var parts []string
	for gvr, counters := range hc.handlers {
		for i, n := range counters {
			parts = append(parts, fmt.Sprintf("%s#%d %d/%d", gvr.Resource, i, n.Load(), api.emittedCount(gvr)))
		}
	}
	return strings.Join(parts, ", ")
}

type countingHandler struct {
	inner cache.ResourceEventHandler
	n     *atomic.Int64
	after func()
}

func (h countingHandler) done() {
	h.n.Add(1)
	h.after()
}

func (h countingHandler) OnAdd(obj interface{}, isInInitialList bool) {
	defer h.done()
	h.inner.OnAdd(obj, isInInitialList)
}

func (h countingHandler) OnUpdate(oldObj, newObj interface{}) {
	defer h.done()
	h.inner.OnUpdate(oldObj, newObj)
}

func (h countingHandler) OnDelete(obj interface{}) {
	defer h.done()
	h.inner.OnDelete(obj)
}

// --- the wrappers: factory -> Core() -> V1() -> Pods()/Nodes() -> Informer() -------------------

func wrapFactory(f informers.SharedInformerFactory, hc *handlerCounts) informers.SharedInformerFactory {
	return factoryWrapper{SharedInformerFactory: f, hc: hc}
}

type factoryWrapper struct {
	informers.SharedInformerFactory
	hc *handlerCounts
}

func (f factoryWrapper) Core() coreinformers.Interface {
	return coreWrapper{Interface: f.SharedInformerFactory.Core(), hc: f.hc}
}

// Scheduling().V1beta1().PodGroups() too: the scheduler's PodGroup handlers (GenericWorkload).
func (f factoryWrapper) Scheduling() schedulinginformers.Interface {
	return schedulingWrapper{Interface: f.SharedInformerFactory.Scheduling(), hc: f.hc}
}

type schedulingWrapper struct {
	schedulinginformers.Interface
	hc *handlerCounts
}

func (s schedulingWrapper) V1beta1() schedulingv1beta1informers.Interface {
	return schedulingV1beta1Wrapper{Interface: s.Interface.V1beta1(), hc: s.hc}
}

type schedulingV1beta1Wrapper struct {
	schedulingv1beta1informers.Interface
	hc *handlerCounts
}

func (s schedulingV1beta1Wrapper) PodGroups() schedulingv1beta1informers.TypedPodGroupInformer {
	return podGroupInformerWrapper{TypedPodGroupInformer: s.Interface.PodGroups(), hc: s.hc}
}

type podGroupInformerWrapper struct {
	schedulingv1beta1informers.TypedPodGroupInformer
	hc *handlerCounts
}

func (p podGroupInformerWrapper) Informer() cache.SharedIndexInformer {
	return informerWrapper{SharedIndexInformer: p.TypedPodGroupInformer.Informer(), gvr: podGroupsGVR, hc: p.hc}
}

type coreWrapper struct {
	coreinformers.Interface
	hc *handlerCounts
}

func (c coreWrapper) V1() corev1informers.Interface {
	return coreV1Wrapper{Interface: c.Interface.V1(), hc: c.hc}
}

type coreV1Wrapper struct {
	corev1informers.Interface
	hc *handlerCounts
}

// Only Informer() is wrapped: the scheduler registers its handlers through it (eventhandlers.go),
// not through TypedInformer().
func (c coreV1Wrapper) Pods() corev1informers.TypedPodInformer {
	return podInformerWrapper{TypedPodInformer: c.Interface.Pods(), hc: c.hc}
}

func (c coreV1Wrapper) Nodes() corev1informers.TypedNodeInformer {
	return nodeInformerWrapper{TypedNodeInformer: c.Interface.Nodes(), hc: c.hc}
}

type podInformerWrapper struct {
	corev1informers.TypedPodInformer
	hc *handlerCounts
}

func (p podInformerWrapper) Informer() cache.SharedIndexInformer {
	return informerWrapper{SharedIndexInformer: p.TypedPodInformer.Informer(), gvr: podsGVR, hc: p.hc}
}

type nodeInformerWrapper struct {
	corev1informers.TypedNodeInformer
	hc *handlerCounts
}

func (n nodeInformerWrapper) Informer() cache.SharedIndexInformer {
	return informerWrapper{SharedIndexInformer: n.TypedNodeInformer.Informer(), gvr: nodesGVR, hc: n.hc}
}

type informerWrapper struct {
	cache.SharedIndexInformer
	gvr schema.GroupVersionResource
	hc  *handlerCounts
}

func (i informerWrapper) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(i.hc.handler(i.gvr, h))
}

func (i informerWrapper) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.hc.handler(i.gvr, h), resync)
}

func (i informerWrapper) AddEventHandlerWithOptions(h cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(i.hc.handler(i.gvr, h), options)
}
