package matrix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const defaultTime = time.Hour

// ParseDuration accepts Go durations ("90m", "1h30m") and Slurm's time
// formats ("MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS").
// The result is positive.
func ParseDuration(s string) (time.Duration, error) {
	d, err := parseDuration(s)
	if err == nil && d > MaxDuration {
		return 0, fmt.Errorf("%q is longer than %d days", s, MaxDuration/(24*time.Hour))
	}
	return d, err
}

// MaxDuration bounds a time limit; longer ones are typos (and past
// Slurm's own limits), and bounding them keeps the arithmetic exact.
const MaxDuration = 365 * 24 * time.Hour

func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, errors.New("duration must be positive")
		}
		return d, nil
	}
	days := 0
	rest := s
	if i := strings.IndexByte(s, '-'); i >= 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > 366 {
			return 0, fmt.Errorf("bad day count in %q (expected 0 to 366)", s)
		}
		days, rest = n, s[i+1:]
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 || rest == "" {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1<<24 || (i > 0 && n > 59) {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		nums[i] = n
	}
	var h, m, sec int
	switch {
	case days > 0 || strings.Contains(s, "-"):
		// D-HH, D-HH:MM, D-HH:MM:SS
		h = nums[0]
		if len(nums) > 1 {
			m = nums[1]
		}
		if len(nums) > 2 {
			sec = nums[2]
		}
	case len(nums) == 1:
		m = nums[0]
	case len(nums) == 2:
		m, sec = nums[0], nums[1]
	default:
		h, m, sec = nums[0], nums[1], nums[2]
	}
	d := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour +
		time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
	if d <= 0 {
		return 0, errors.New("duration must be positive")
	}
	return d, nil
}

// SlurmTime formats d for sbatch --time, rounding up to whole seconds.
func SlurmTime(d time.Duration) string {
	secs := int64((d + time.Second - 1) / time.Second)
	days := secs / 86400
	secs %= 86400
	hms := fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	if days > 0 {
		return fmt.Sprintf("%d-%s", days, hms)
	}
	return hms
}
