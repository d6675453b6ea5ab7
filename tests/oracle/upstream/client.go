package main

// holdingClient is the clientset the scheduler writes through: pod writes first wait in
// cluster.holdWrite. The wait must come before the fake clientset, which runs its reactors under
// one lock: a write held inside a reactor would block every other call, the current attempt's own
// included.

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

type holdingClient struct {
	*fake.Clientset
	hold func(objectKey)
}

func (c holdingClient) CoreV1() corev1client.CoreV1Interface {
	return holdingCoreV1{CoreV1Interface: c.Clientset.CoreV1(), hold: c.hold}
}

type holdingCoreV1 struct {
	corev1client.CoreV1Interface
	hold func(objectKey)
}

func (c holdingCoreV1) Pods(namespace string) corev1client.PodInterface {
	return holdingPods{PodInterface: c.CoreV1Interface.Pods(namespace), namespace: namespace, hold: c.hold}
}

type holdingPods struct {
	corev1client.PodInterface
	namespace string
	hold      func(objectKey)
}

func (p holdingPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Pod, error) {
	p.hold(objectKey{p.namespace, name})
	return p.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
}

func (p holdingPods) Update(ctx context.Context, pod *v1.Pod, opts metav1.UpdateOptions) (*v1.Pod, error) {
	p.hold(objectKey{p.namespace, pod.Name})
	return p.PodInterface.Update(ctx, pod, opts)
}

func (p holdingPods) UpdateStatus(ctx context.Context, pod *v1.Pod, opts metav1.UpdateOptions) (*v1.Pod, error) {
	p.hold(objectKey{p.namespace, pod.Name})
	return p.PodInterface.UpdateStatus(ctx, pod, opts)
}

func (p holdingPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	p.hold(objectKey{p.namespace, name})
	return p.PodInterface.Delete(ctx, name, opts)
}

func (p holdingPods) Bind(ctx context.Context, binding *v1.Binding, opts metav1.CreateOptions) error {
	p.hold(objectKey{p.namespace, binding.Name})
	return p.PodInterface.Bind(ctx, binding, opts)
}
