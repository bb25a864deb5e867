package memory

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// The checks confirm a detector's candidate and return its canonical
// value, which decides which occurrences are the same data.

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

func checkEmail(s string) (string, bool) { return strings.ToLower(s), true }

// ibanLengths is the length of each country's IBAN (SWIFT's IBAN
// registry): a candidate of another length, or of no IBAN country, is not
// one, which keeps lower-case words with digits out at one in 97 of the
// rest.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
	"BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
	"EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
	"GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
	"JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
	"MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
	"NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
	"SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// checkIBAN: ISO 13616, the country's length and mod 97 of the rearranged
// number is 1. Case is ignored.
func checkIBAN(s string) (string, bool) {
	v := strings.ToUpper(strings.ReplaceAll(s, " ", ""))
	if n, ok := ibanLengths[v[:2]]; !ok || n != len(v) {
		return "", false
	}
	rem := 0
	for _, r := range v[4:] + v[:4] {
		switch {
		case r >= '0' && r <= '9':
			rem = (rem*10 + int(r-'0')) % 97
		case r >= 'A' && r <= 'Z':
			rem = (rem*100 + int(r-'A'+10)) % 97
		default:
			return "", false
		}
	}
	return v, rem == 1
}

// cardIssuers are the issuers' number ranges and lengths: Visa,
// Mastercard, Amex, Discover, JCB, UnionPay, Diners.
var cardIssuers = []struct {
	lo, hi     int // on the first six digits
	minN, maxN int
}{
	{400000, 499999, 13, 19}, // Visa (13, 16 and 19)
	{510000, 559999, 16, 16}, // Mastercard
	{222100, 272099, 16, 16}, // Mastercard 2-series
	{340000, 349999, 15, 15}, // Amex
	{370000, 379999, 15, 15}, // Amex
	{601100, 601199, 16, 19}, // Discover
	{644000, 659999, 16, 19}, // Discover
	{352800, 358999, 16, 19}, // JCB
	{620000, 629999, 16, 19}, // UnionPay
	{300000, 305999, 14, 14}, // Diners
	{360000, 369999, 14, 14}, // Diners
	{380000, 399999, 14, 14}, // Diners
	{350000, 352799, 16, 19}, // JCB's wider range
}

// checkCard: 13-19 digits in one of the issuers' ranges that pass the
// Luhn check, so that most order ids and timestamps (which pass Luhn one
// time in ten) do not.
func checkCard(s string) (string, bool) {
	d := digits(s)
	n := len(d)
	if n < 13 || n > 19 {
		return "", false
	}
	iin, _ := strconv.Atoi(d[:6])
	for _, c := range cardIssuers {
		if iin >= c.lo && iin <= c.hi && n >= c.minN && n <= c.maxN {
			if c.lo == 400000 && n != 13 && n != 16 && n != 19 {
				return "", false
			}
			return d, luhn(d)
		}
	}
	return "", false
}

func luhn(d string) bool {
	sum := 0
	for i := range len(d) {
		x := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			if x *= 2; x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	return sum%10 == 0
}

// checkSSN: area 000, 666 and 900-999, group 00 and serial 0000 were
// never issued (SSA).
func checkSSN(s string) (string, bool) {
	d := digits(s)
	if len(d) != 9 {
		return "", false
	}
	area, _ := strconv.Atoi(d[:3])
	ok := area != 0 && area != 666 && area < 900 && d[3:5] != "00" && d[5:] != "0000"
	return d, ok
}

// checkNINumber: the prefix letters HMRC never issues (D, F, I, Q, U, V
// anywhere; O second; BG, GB, KN, NK, NT, TN, ZZ).
func checkNINumber(s string) (string, bool) {
	v := strings.ToUpper(strings.ReplaceAll(s, " ", ""))
	a, b := v[0], v[1]
	if strings.IndexByte("DFIQUV", a) >= 0 || strings.IndexByte("DFIQUVO", b) >= 0 {
		return "", false
	}
	switch v[:2] {
	case "BG", "GB", "KN", "NK", "NT", "TN", "ZZ":
		return "", false
	}
	return v, true
}

// checkIPv4 takes four decimal octets up to 255, zero-padded or not
// ("010.001.002.003" is 10.1.2.3 as tools print it), of a host.
func checkIPv4(s string) (string, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return "", false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 {
			return "", false
		}
		b[i] = byte(n)
	}
	// 0/8 and 240/4 hold no host: "0.0.0.0:22" and "255.255.255.0" are
	// wildcards and masks.
	return netip.AddrFrom4(b).String(), b[0] != 0 && b[0] != 255
}

// checkIPv6 wants a digit: "::" in a Haskell signature and "ab::cd" are
// addresses to a parser, not in a conversation.
func checkIPv6(s string) (string, bool) {
	if strings.Count(s, ":") < 2 || !strings.ContainsAny(s, "0123456789") {
		return "", false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", false
	}
	return a.String(), true
}

var nanpShape = regexp.MustCompile(`^(?:\([0-9]{3}\) ?|[0-9]{3}[ .\-])[0-9]{3}[ .\-][0-9]{4}$`)

// thousands is a number grouped by threes after a trunk 0
// ("8 045 311 447"): a count, not a phone number.
var thousands = regexp.MustCompile(`^0[0-9]{1,2}(?: [0-9]{3}){2,}$`)

// checkPhone: 7 to 15 digits (E.164's bounds) after a leading + or 00;
// without one, a North American number in its 3-3-4 groups ("(555)
// 123-4567", "555.123.4567", "1-800-555-0175") or written whole with a valid area code and
// exchange ("4155550100"), or a national number with its trunk 0 ("020
// 7946 0958", grouped: a run of digits after a 0 is an id as often), so
// that dates, versions, ranges and grouped ids are left alone.
func checkPhone(s string) (string, bool) {
	d := digits(s)
	switch {
	case s[0] == '+':
		return "+" + d, len(d) >= 7 && len(d) <= 15
	case strings.HasPrefix(s, "00"):
		return "+" + d[2:], len(d) >= 9 && len(d) <= 17 && d[2] != '0'

	case nanpShape.MatchString(s):
		return d, true
	case len(s) > 2 && s[0] == '1' && strings.IndexByte(" .-", s[1]) >= 0 && nanpShape.MatchString(s[2:]):
		return d[1:], true // the country code written without its +
	case len(s) == len(d) && (len(d) == 10 || len(d) == 11 && d[0] == '1'):
		return d, nanpValid(d[len(d)-10:])
	case strings.HasPrefix(s, "0") || strings.HasPrefix(s, "(0"):
		return d, len(d) >= 9 && len(d) <= 12 && d[1] != '0' && len(s) > len(d) && !thousands.MatchString(s)
	}
	return "", false
}

// nanpValid: a North American area code and exchange start with 2-9 and
// the area code is not N11 (a service code) nor 555 (fiction).
func nanpValid(d string) bool {
	return d[0] >= '2' && d[3] >= '2' && d[1:3] != "11" && d[:3] != "555"
}
