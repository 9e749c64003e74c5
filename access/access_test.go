package access

import (
	"context"
	"testing"
)

func TestRolesOrder(t *testing.T) {
	rs := Roles()
	for i, r := range rs {
		got, err := ParseRole(r.String())
		if err != nil || got != r {
			t.Fatalf("ParseRole(%q) = %v, %v", r, got, err)
		}
		for j, need := range rs {
			if want := i >= j; r.Allows(need) != want {
				t.Errorf("%v.Allows(%v) = %v, want %v", r, need, !want, want)
			}
		}
		if r.Allows(RoleNone) {
			t.Errorf("%v allows RoleNone", r)
		}
	}
	if RoleNone.Allows(Viewer) {
		t.Error("RoleNone allows viewer")
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("ParseRole(root) succeeded")
	}
}

func TestPrincipalContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("empty context has a principal")
	}
	p := Principal{Kind: KindUser, Role: Support, UserID: 7, Name: "a@example.com"}
	got, ok := FromContext(WithPrincipal(context.Background(), p))
	if !ok || got.UserID != 7 || got.Role != Support {
		t.Fatalf("FromContext = %+v, %v", got, ok)
	}
}
