# Open3: capture3, popen3 with threads reading both streams, pipeline
require "open3"
out, err, st = Open3.capture3("sh", "-c", "echo out; echo err >&2; exit 2")
raise [out, err, st].inspect unless out == "out\n" && err == "err\n" && st.exitstatus == 2
o, s = Open3.capture2("python3", "-c", "import sys; print(sys.stdin.read()[::-1])", stdin_data: "abc")
raise o unless o.strip == "cba" && s.success?
Open3.popen3("cat") do |i, o2, e, t|
  i.write("x" * 100_000)
  i.close
  raise "popen3" unless o2.read.size == 100_000 && t.value.success?
end
last = Open3.pipeline_r("seq 10", "sort -rn", "head -1") { |r, ts| r.read }
raise last unless last == "10\n"
puts "OK"
