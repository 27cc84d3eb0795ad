package imagebuild

import "fmt"

// PinnedCommits reads the pins file at path without the network: the
// components pinned by a 40-hex commit, and for each of the others (a
// tag, a branch, a local checkout) why it was left unresolved. render
// --offline takes these as the commits the image must record.
func PinnedCommits(path string) (commits map[string]string, unresolved []string, err error) {
	p, err := LoadPins(path)
	if err != nil {
		return nil, nil, err
	}
	commits = map[string]string{}
	for _, c := range p.Components {
		switch {
		case c.Path != "":
			unresolved = append(unresolved, fmt.Sprintf("%s (a local checkout)", c.Name))
		case commitRE().MatchString(c.Ref):
			commits[c.Name] = c.Ref
		default:
			unresolved = append(unresolved, fmt.Sprintf("%s (ref %s)", c.Name, c.Ref))
		}
	}
	return commits, unresolved, nil
}
