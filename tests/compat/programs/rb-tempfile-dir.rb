# Tempfile, Dir.mktmpdir, Dir.tmpdir, hard-coded /tmp, FileUtils, Dir.glob
require "tempfile"
require "tmpdir"
require "fileutils"
tf = Tempfile.new("compat")
tf.write("temp")
tf.flush
raise "tempfile" unless File.read(tf.path) == "temp"
tf.close!
Dir.mktmpdir do |d|
  FileUtils.mkdir_p(File.join(d, "a/b"))
  FileUtils.touch(File.join(d, "a/b/c.rb"))
  raise "glob" unless Dir.glob("#{d}/**/*.rb").size == 1
end
t = "/tmp/compat-rb-#{Process.pid}"
File.write(t, "x")
raise "/tmp" unless File.read(t) == "x"
File.delete(t)
puts "tmpdir #{Dir.tmpdir}"
raise "root" unless Dir.children("/").include?("usr") && Dir.entries("/dev").include?("null")
puts "OK"
