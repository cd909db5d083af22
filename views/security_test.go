package views

import (
	"testing"
	"time"

	"github.com/a-h/templ"
)

func TestViewLogin(t *testing.T) {
	doc := render(t, Login(LoginPage{Layout: layout(""), Next: "/locks?match=a*", Error: "That token is not valid."}))
	f := one(t, doc.Selection, "login-form")
	if attr(t, f, "method") != "post" || attr(t, f, "action") != "/login" {
		t.Errorf("form %v", f.Nodes[0].Attr)
	}
	if v, _ := f.Find(`input[name="next"]`).Attr("value"); v != "/locks?match=a*" {
		t.Errorf("next %q", v)
	}
	if attr(t, one(t, doc.Selection, "login-token"), "type") != "password" {
		t.Error("token field is not a password field")
	}
	if text(t, doc.Selection, "login-error") != "That token is not valid." {
		t.Error("error message")
	}
}

func TestViewAuditEscapes(t *testing.T) {
	rows := []AuditRow{{At: at, Role: "admin", Fingerprint: "ab12cd34", Remote: "127.0.0.1", Action: "force-unlock",
		Target: hostile[0], Before: `holders: "><img src=x> ×1`, After: "released", Outcome: "ok", Reason: "<b>why</b>"},
		{At: at.Add(-time.Second), Action: "sign-in", Target: "session", Outcome: "denied"}}
	doc := render(t, Audit(AuditPage{Layout: layout(NavAudit), Records: rows}))
	if n := doc.Find(tid("audit-row")).Length(); n != 2 {
		t.Fatalf("rows %d", n)
	}
	first := doc.Find(tid("audit-row")).First()
	if text(t, first, "audit-target") != hostile[0] || text(t, first, "audit-reason") != "<b>why</b>" ||
		text(t, first, "audit-actor") != "admin (ab12cd34)" || attr(t, first, "data-outcome") != "ok" {
		t.Errorf("first row %q", first.Text())
	}
	if doc.Find("img").Length()+doc.Find("b").Length() != 0 || doc.Find("script[src]").Length() != len(VendorScripts)+len(Scripts) {
		t.Error("audit values rendered as markup")
	}
	if text(t, doc.Find(tid("audit-row")).Last(), "audit-actor") != "anonymous" {
		t.Error("a failed sign-in's actor")
	}
	empty := render(t, Audit(AuditPage{Layout: layout(NavAudit)}))
	one(t, empty.Selection, "audit-empty")
}

// A viewer's pages offer no form that changes anything.
func TestViewReadOnlyHidesForms(t *testing.T) {
	l := layout(NavLocks)
	l.ReadOnly, l.Role = true, "viewer"
	lock := LockRow{Name: "a", Kind: "reentrant", Holders: []HolderRow{{ID: "u:1", Count: 1}}, PTTLMS: 1000}
	for _, c := range []templ.Component{
		LockDetail(LockDetailPage{Layout: l, Lock: lock}),
		LimiterDetail(LimiterDetailPage{Layout: l, Limiter: LimiterRow{Name: "r", Rate: 1, IntervalMS: 1}}),
	} {
		doc := render(t, c)
		if n := doc.Find(`form[method="post"]`).Length() + doc.Find(tid("force-unlock-form")).Length(); n != 0 {
			t.Errorf("read-only page has %d change forms", n)
		}
		if text(t, doc.Selection, "whoami-role") != "viewer" || doc.Find(tid("signout")).Length() != 0 {
			t.Error("whoami")
		}
	}
	l.ReadOnly, l.Role, l.CanSignOut = false, "admin", true
	doc := render(t, LockDetail(LockDetailPage{Layout: l, Lock: lock}))
	if doc.Find(tid("force-unlock-form")).Length() != 1 || doc.Find(`form[action="/logout"]`).Length() != 1 {
		t.Error("admin page lacks the force-unlock or sign-out form")
	}
}

func TestViewForceUnlockReason(t *testing.T) {
	doc := render(t, ForceUnlockConfirm(ForceUnlockConfirmPage{Layout: layout(NavLocks), Name: "a", Holder: "u:1",
		Reason: "<i>x</i>", ReasonError: "reason is required"}))
	in := one(t, doc.Selection, "force-unlock-reason")
	if attr(t, in, "name") != FieldReason || attr(t, in, "value") != "<i>x</i>" || attr(t, in, "maxlength") != "500" {
		t.Errorf("reason input %v", in.Nodes[0].Attr)
	}
	if _, ok := in.Attr("required"); !ok {
		t.Error("reason not required")
	}
	if text(t, doc.Selection, "error-reason") != "reason is required" || doc.Find("i").Length() != 0 {
		t.Error("reason error")
	}
}
