# locale and time: setlocale(''), preferred encoding, strftime, zoneinfo, TZ switch
import datetime
import locale
import os
import time
import zoneinfo

print(locale.setlocale(locale.LC_ALL, ""))
assert locale.getpreferredencoding() == "UTF-8"
assert locale.localeconv()["decimal_point"] == "."
paris = datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
assert paris.utcoffset() == datetime.timedelta(hours=2)
ny = paris.astimezone(zoneinfo.ZoneInfo("America/New_York"))
assert ny.hour == 6, ny
assert "Asia/Tokyo" in zoneinfo.available_timezones()
os.environ["TZ"] = "Asia/Tokyo"
time.tzset()
assert time.localtime(0).tm_hour == 9
os.environ["TZ"] = "UTC"
time.tzset()
print(time.strftime("%Y-%m-%d %H:%M:%S %Z"), datetime.datetime.now().astimezone().tzname())
print("OK")
