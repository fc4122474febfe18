// Package resources stands in for yunikorn-core's pkg/common/resources as
// far as an RM sees it: the resource values that the read-only views of
// pkg/scheduler/objects return, convertible to the SI's own message.
package resources

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// Quantity is one resource type's amount, in the unit the RM sent it in
// (vcore in millicores for the k8shim).
type Quantity int64

// Resource is a set of quantities by resource type name.
type Resource struct {
	Resources map[string]Quantity
}

// NewResource returns an empty resource.
func NewResource() *Resource {
	return &Resource{Resources: map[string]Quantity{}}
}

// NewResourceFromMap returns a resource holding a copy of m.
func NewResourceFromMap(m map[string]Quantity) *Resource {
	r := NewResource()
	for k, v := range m {
		r.Resources[k] = v
	}
	return r
}

// NewResourceFromProto returns the resource an SI message carries; nil
// gives an empty resource.
func NewResourceFromProto(p *si.Resource) *Resource {
	r := NewResource()
	if p == nil {
		return r
	}
	for k, q := range p.Resources {
		if q != nil {
			r.Resources[k] = Quantity(q.Value)
		}
	}
	return r
}

// ToProto returns the resource as the SI message. A nil resource gives an
// empty message, as the reference does.
func (r *Resource) ToProto() *si.Resource {
	p := &si.Resource{Resources: map[string]*si.Quantity{}}
	if r == nil {
		return p
	}
	for k, v := range r.Resources {
		p.Resources[k] = &si.Quantity{Value: int64(v)}
	}
	return p
}

// Clone returns a copy (nil stays nil).
func (r *Resource) Clone() *Resource {
	if r == nil {
		return nil
	}
	return NewResourceFromMap(r.Resources)
}

// IsZero reports whether every quantity is zero (nil is zero).
func (r *Resource) IsZero() bool {
	if r == nil {
		return true
	}
	for _, v := range r.Resources {
		if v != 0 {
			return false
		}
	}
	return true
}

// Equals reports whether both hold the same quantities; a missing type
// equals zero.
func Equals(left, right *Resource) bool {
	get := func(r *Resource, k string) Quantity {
		if r == nil {
			return 0
		}
		return r.Resources[k]
	}
	for _, r := range []*Resource{left, right} {
		if r == nil {
			continue
		}
		for k := range r.Resources {
			if get(left, k) != get(right, k) {
				return false
			}
		}
	}
	return true
}

// String writes the quantities sorted by name, as "map[memory:1 vcore:2]".
func (r *Resource) String() string {
	if r == nil {
		return "nil resource"
	}
	keys := make([]string, 0, len(r.Resources))
	for k := range r.Resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, r.Resources[k])
	}
	return "map[" + strings.Join(parts, " ") + "]"
}
