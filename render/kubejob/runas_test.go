package kubejob

import (
	"fmt"
	"testing"
)

// container.user on Kubernetes: root and UID[:GID] set the pod's user;
// submitter and image leave the image's.
func TestRunAs(t *testing.T) {
	for user, want := range map[string]string{"": "<nil>", "submitter": "<nil>", "image": "<nil>", "root": "0:0", "1000": "1000:-", "1000:2000": "1000:2000"} {
		sc := runAs(user)
		got := "<nil>"
		if sc != nil {
			g := "-"
			if sc.RunAsGroup != nil {
				g = fmt.Sprint(*sc.RunAsGroup)
			}
			got = fmt.Sprintf("%d:%s", *sc.RunAsUser, g)
		}
		if got != want {
			t.Errorf("user %q: %s, want %s", user, got, want)
		}
	}
}
