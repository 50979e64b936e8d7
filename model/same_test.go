package model

import (
	"reflect"
	"testing"
)

// TestSameSeesEveryField: Same tells apart two clusters that differ in any
// one field, at any depth (found by reflection, so that a field added
// later is covered), and holds for a deep copy.
func TestSameSeesEveryField(t *testing.T) {
	base := func() *Cluster {
		return &Cluster{
			ID:      "c",
			Domains: []Domain{{ID: "sw0", Kind: DomainSwitch}},
			Nodes: []Node{{
				Name:    "n0",
				Domains: []string{"sw0"},
				Cards: []Card{{Index: 0, UUID: "GPU-0", Model: "H100", MemBytes: 80, NUMA: 0, PCIBusID: "0:1",
					NVLinks: []NVLink{{Peer: 1, Links: 18}}, Island: "i0"}},
			}},
		}
	}
	if !base().Same(base()) {
		t.Fatal("a copy is not the same cluster")
	}
	// Every settable leaf: change it in a fresh copy, and Same must see it.
	var paths []string
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), path+"."+v.Type().Field(i).Name)
				}
			}
		case reflect.Slice:
			if v.Len() > 0 {
				walk(v.Index(0), path+"[0]")
			}
			paths = append(paths, path+"+") // one more element
		default:
			paths = append(paths, path)
		}
	}
	walk(reflect.ValueOf(base()).Elem(), "")
	for _, p := range paths {
		c := base()
		if !mutate(reflect.ValueOf(c).Elem(), "", p) {
			t.Fatalf("%s: not found", p)
		}
		if base().Same(c) || c.Same(base()) {
			t.Errorf("clusters differing in %s are the same", p)
		}
	}
	if len(paths) < 20 {
		t.Fatalf("only %d fields walked", len(paths))
	}
}

// mutate changes the leaf at path want in v (path is where v is).
func mutate(v reflect.Value, path, want string) bool {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && mutate(v.Field(i), path+"."+v.Type().Field(i).Name, want) {
				return true
			}
		}
		return false
	case reflect.Slice:
		if path+"+" == want {
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			return true
		}
		return v.Len() > 0 && mutate(v.Index(0), path+"[0]", want)
	}
	if path != want {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1)
	case reflect.Uint8:
		v.SetUint(v.Uint() + 1)
	default:
		panic("mutate: kind " + v.Kind().String())
	}
	return true
}
