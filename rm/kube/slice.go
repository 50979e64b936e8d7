package kube

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// SliceFor returns the ResourceSlice that publishes a node's cards for a
// DRA driver, one device "gpu-<index>" per card with the attributes named
// by attrs (bare names, in the driver's domain): what a cluster without a
// DRA driver (or the fake cluster of the tests) uses instead of one.
func SliceFor(n *pb.Node, driver string, attrs Attributes) *resourcev1.ResourceSlice {
	node := n.GetName()
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver, Labels: map[string]string{"app.kubernetes.io/managed-by": "huitian-topo"}},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: driver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for _, c := range n.GetCards() {
		if c.GetUnhealthy() {
			continue
		}
		d := resourcev1.Device{Name: fmt.Sprintf("gpu-%d", c.GetIndex()), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}}
		idx := int64(c.GetIndex())
		d.Attributes[resourcev1.QualifiedName(attrs.Index)] = resourcev1.DeviceAttribute{IntValue: &idx}
		str := func(name, v string) {
			if name != "" && v != "" {
				d.Attributes[resourcev1.QualifiedName(name)] = resourcev1.DeviceAttribute{StringValue: &v}
			}
		}
		str(attrs.UUID, c.GetUuid())
		str(attrs.Model, c.GetModel())
		str(attrs.Island, c.GetNvlinkIsland())
		if attrs.Memory != "" && c.GetMemoryBytes() > 0 {
			d.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				resourcev1.QualifiedName(attrs.Memory): {Value: *resource.NewQuantity(c.GetMemoryBytes(), resource.BinarySI)}}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

// PublishSlice creates the slice, or replaces an existing one of the same
// name under a new pool generation.
func PublishSlice(ctx context.Context, cs kubernetes.Interface, s *resourcev1.ResourceSlice) (*resourcev1.ResourceSlice, error) {
	api := cs.ResourceV1().ResourceSlices()
	out, err := api.Create(ctx, s, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return out, err
	}
	cur, err := api.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	next := s.DeepCopy()
	next.ResourceVersion = cur.ResourceVersion
	next.Spec.Pool.Generation = cur.Spec.Pool.Generation + 1
	return api.Update(ctx, next, metav1.UpdateOptions{})
}
