//! C `ctime()`-style dates computed from a Unix time and a UTC offset, so the
//! serializers never consult the process time zone themselves.
//!
//! Layout: `Www Mmm dd hh:mm:ss yyyy\n`, day of month padded with a space.

use super::model::Stamp;

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Civil date (year, month 1-12, day 1-31) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's days_from_civil inverse, valid for the whole i64 range
    // we can meet here.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `ctime()` text for `unix_secs` seen at local offset `utc_offset_secs`,
/// including the trailing newline.
pub fn ctime(unix_secs: i64, utc_offset_secs: i32) -> String {
    let local = unix_secs.saturating_add(utc_offset_secs as i64);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let wday = (days + 4).rem_euclid(7) as usize;
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}\n",
        DAYS[wday],
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        year
    )
}

/// `ctime()` text of a record stamp's wall-clock time.
pub fn ctime_of(at: &Stamp) -> String {
    ctime(at.unix_millis.div_euclid(1000), at.utc_offset_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch() {
        assert_eq!(ctime(0, 0), "Thu Jan  1 00:00:00 1970\n");
    }

    #[test]
    fn known_dates() {
        // 2004-02-06 13:13:42 UTC
        assert_eq!(ctime(1_076_073_222, 0), "Fri Feb  6 13:13:42 2004\n");
        // 2008-03-04 10:15:02 UTC
        assert_eq!(ctime(1_204_625_702, 0), "Tue Mar  4 10:15:02 2008\n");
        // leap day and two-digit day
        assert_eq!(ctime(951_782_400, 0), "Tue Feb 29 00:00:00 2000\n");
        assert_eq!(ctime(1_700_000_000, 0), "Tue Nov 14 22:13:20 2023\n");
        assert_eq!(ctime(4_102_444_799, 0), "Thu Dec 31 23:59:59 2099\n");
    }

    #[test]
    fn offsets_and_negative_times() {
        // One hour east of UTC crosses midnight into the next day.
        assert_eq!(
            ctime(1_700_000_000 + 6400, 3600),
            "Wed Nov 15 01:00:00 2023\n"
        );
        // West of UTC at the epoch goes back into 1969.
        assert_eq!(ctime(0, -5 * 3600), "Wed Dec 31 19:00:00 1969\n");
        assert_eq!(ctime(-1, 0), "Wed Dec 31 23:59:59 1969\n");
    }

    #[test]
    fn stamp_uses_whole_seconds() {
        let at = Stamp {
            micros_since_load: 0,
            unix_millis: 1_999,
            utc_offset_secs: 0,
        };
        assert_eq!(ctime_of(&at), "Thu Jan  1 00:00:01 1970\n");
        let at = Stamp {
            micros_since_load: 0,
            unix_millis: -1,
            utc_offset_secs: 0,
        };
        assert_eq!(ctime_of(&at), "Wed Dec 31 23:59:59 1969\n");
    }
}
