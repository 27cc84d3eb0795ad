package imagebuild

import (
	"context"
	"strings"
)

// ImagePlatforms are the platforms of ref's images: an index's, in its
// order, or the one of a plain image (its config's). A file (.sqsh,
// .sif, a path) has none. WithInsecureRegistry applies.
func ImagePlatforms(ctx context.Context, ref string, opts ...Option) ([]string, error) {
	if strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".") || strings.HasSuffix(ref, ".sqsh") || strings.HasSuffix(ref, ".sif") {
		return nil, nil
	}
	o, err := apply(opts)
	if err != nil {
		return nil, err
	}
	imgs, _, cleanup, err := openImages(ctx, ref, o.insecure)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var out []string
	for _, im := range imgs {
		if im.platform != "" {
			out = append(out, im.platform)
		}
	}
	return out, nil
}
