#!/usr/bin/perl
# The identity agent of a saved guest (docs/architecture.md, "Guests from a
# snapshot"; the host's side is vm/restore_identity.ts). vm/snapshot.ts
# starts it before the guest's state is saved; it waits in a read of the
# guest's second serial line (ttyS1). A guest restored from the state runs
# it on the spot: it answers the host with no process to start and no SSH
# handshake before it, while the host's SSH connection is still being made.
#
# Usage: identity_agent.pl TTY COLDPLUG-COMMAND LOG
# It makes TTY raw, then returns, leaving itself in the background (its
# errors from then on in LOG). With TTY `-` it talks on its standard input
# and output instead, in the foreground (a test on the host).
# Each exchange is lines; the host begins it:
#   host   hello NAME COLDPLUG   NAME the hostname to take; COLDPLUG 1 runs
#                                COLDPLUG-COMMAND at the end, 0 does not
#   agent  ready
#   host   time
#   agent  clock NS              its clock, as `date +%s%N` prints it
#   host   lead US SEED          the clock's lead over the host's in µs, and
#                                RESEED_BYTES bytes of host randomness, hex
#   agent  done                  or: fail REASON
# Then it waits for the next hello. Lines that are not a hello between
# exchanges are ignored; anything unexpected within one fails it.
use strict;
use warnings;
use Fcntl qw(O_NOCTTY O_RDWR);
use POSIX ();
use Time::HiRes ();

# settimeofday(2)'s number on x86_64, the guests' only architecture
# (syscall.ph would name it, at the cost of parsing generated headers).
use constant SYS_SETTIMEOFDAY => 164;
# _IO('R', 0x07): reseed the CRNG from the input pool now.
use constant RNDRESEEDCRNG => 0x5207;
# Bytes of host randomness per exchange.
use constant RESEED_BYTES => 64;

my ($line_path, $coldplug, $log) = @ARGV;
defined $coldplug or die "usage: $0 TTY|- COLDPLUG-COMMAND LOG\n";
my ($in, $out) = (\*STDIN, \*STDOUT);
if ($line_path ne '-') {
	defined $log or die "usage: $0 TTY|- COLDPLUG-COMMAND LOG\n";
	# O_NOCTTY: opened by the session that starts the agent, the line would
	# become that session's controlling terminal, and be hung up under the
	# agent when the session ends.
	sysopen(my $tty, $line_path, O_RDWR | O_NOCTTY) or die "$line_path: $!\n";
	# Raw (no echo, no line editing, 8 bits), local (no modem lines to hang
	# up on), as fast as the port goes; before the start returns, so a
	# hello the host sends at once is neither echoed nor edited.
	open(STDIN, '<&', $tty) or die "$line_path: $!\n";
	system('stty', 'raw', '-echo', 'clocal', '-crtscts', '115200') == 0
		or die "stty on $line_path failed\n";
	defined(my $pid = fork()) or die "fork: $!\n";
	exit 0 if $pid;
	POSIX::setsid();
	open(STDIN, '<', '/dev/null') or die "/dev/null: $!\n";
	open(STDOUT, '>', '/dev/null') or die "/dev/null: $!\n";
	open(STDERR, '>>', $log) or die "$log: $!\n";
	($in, $out) = ($tty, $tty);
}
binmode($in);
binmode($out);
my $pending = '';

sub send_line {
	my $line = "$_[0]\n";
	my $n = syswrite($out, $line);
	defined $n && $n == length($line) or die "writing to the host: $!\n";
}

# The next line from the host, without its line end.
sub next_line {
	my $nl;
	while (($nl = index($pending, "\n")) < 0) {
		my $n = sysread($in, $pending, 4096, length($pending));
		defined $n or die "reading from the host: $!\n";
		next if $n;
		# the end of a pipe (a test on the host): nothing more will come
		exit 0 unless -t $in;
		# a hangup of the line: wait for it to come back rather than spin
		select(undef, undef, undef, 0.1);
	}
	my $line = substr($pending, 0, $nl + 1, '');
	$line =~ s/\r?\n\z//;
	return $line;
}

sub put {
	my ($path, $text) = @_;
	open(my $f, '>', $path) or die "$path: $!\n";
	print $f $text;
	close($f) or die "$path: $!\n";
}

sub identity {
	my ($name, $with_coldplug) = @_;
	send_line('ready');
	my $ask = next_line();
	$ask eq 'time' or die "expected time, got '$ask'\n";
	my ($s0, $us0) = Time::HiRes::gettimeofday();
	send_line(sprintf('clock %d%06d000', $s0, $us0));
	my $answer = next_line();
	my $hex = 2 * RESEED_BYTES;
	$answer =~ /^lead (-?\d+) ([0-9a-f]{$hex})$/
		or die "expected lead US SEED, got '$answer'\n";
	my ($lead_us, $seed) = ($1, pack('H*', $2));
	# Relative to its own second reading, with nothing in between: how late
	# the lead came does not matter (the lead is constant).
	my ($s, $us) = Time::HiRes::gettimeofday();
	my $t = $s * 1000000 + $us - $lead_us;
	syscall(SYS_SETTIMEOFDAY, pack('l!l!', int($t / 1000000), $t % 1000000), 0) == 0
		or die "settimeofday: $!\n";
	# A write only mixes into the input pool; the ioctl reseeds the CRNG
	# from it now, before the machine-id is drawn from it.
	open(my $r, '>', '/dev/urandom') or die "/dev/urandom: $!\n";
	my $n = syswrite($r, $seed);
	defined $n && $n == RESEED_BYTES or die "/dev/urandom: $!\n";
	ioctl($r, RNDRESEEDCRNG, 0) or die "RNDRESEEDCRNG: $!\n";
	close($r);
	put('/proc/sys/kernel/hostname', $name);
	open(my $u, '<', '/proc/sys/kernel/random/uuid') or die "uuid: $!\n";
	my $id = <$u>;
	close($u);
	$id =~ tr/-//d;
	put('/etc/machine-id', $id);
	if ($with_coldplug) {
		system('/bin/sh', '-c', $coldplug) == 0
			or die 'coldplug: ' . ($? & 127 ? 'signal ' . ($? & 127) : 'exit ' . ($? >> 8)) . "\n";
	}
}

for (;;) {
	my $hello = next_line();
	next unless $hello =~ /^hello ([a-z0-9][a-z0-9-]*) ([01])$/;
	my @args = ($1, $2);
	if (eval { identity(@args); 1 }) {
		send_line('done');
	} else {
		(my $why = $@) =~ s/\s+\z//;
		$why =~ tr/\n/ /;
		send_line("fail $why");
	}
}
