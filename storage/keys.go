package storage

import "time"

// keyDayLayout lays out the day part of a payload key.
const keyDayLayout = "2006/01/02"

// PayloadKey returns the object key of a message's payload:
// "payloads/YYYY/MM/DD/<messageID>", dated in UTC by when the callback was
// received. messageID must not contain "/".
func PayloadKey(received time.Time, messageID string) string {
	return DayPrefix(received) + messageID
}

// DayPrefix returns the key prefix shared by every payload received on day
// (in UTC): "payloads/YYYY/MM/DD/". Retention passes it to DeletePrefix.
func DayPrefix(day time.Time) string {
	return "payloads/" + day.UTC().Format(keyDayLayout) + "/"
}
