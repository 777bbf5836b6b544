#!/bin/sh
# Query plans of the statements PostgresStorage runs, read from the very
# files the driver loads (executor-postgres/sql/**/*.sql), on a seeded copy
# of the schema:
#
#   executor-postgres/explain/run.sh -h 127.0.0.1 -U postgres -d test
#
# The arguments go to `psql` (the database named is only where rex_explain
# is created from); N=1000000 in the environment seeds that many waiting
# tasks instead of 10,000. The script creates the database rex_explain,
# applies every migration and fill.sql, prints each statement's plan
# (`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)`, inside a transaction that is
# rolled back, so nothing changes), and drops the database. For each
# statement it reads the file, leaves out the comments, keeps the lines
# marked `-- if NAME` for the names given (the others are left out and the
# placeholders numbered 1, 2, .. in order, as the driver does), and puts the
# given test values in place of $1, $2, ...
set -eu
crate=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-10000}

# statement NAME FLAGS VALUE...: the text of sql/NAME.sql with the test values.
statement() {
    name=$1 flags=$2
    shift 2
    perl -e '
        my ($file, $flags, @values) = @ARGV;
        my %on = map { $_ => 1 } split /,/, $flags;
        open my $fh, "<", $file or die "$file: $!\n";
        my ($optional, @lines) = (0);
        while (my $line = <$fh>) {
            chomp $line;
            next if $line =~ /^\s*--/;
            if ($line =~ /^(.*?)\s+-- if (\w+)\s*$/) {
                $optional = 1;
                next unless $on{$2};
                $line = $1;
            }
            push @lines, $line;
        }
        my $text = join "\n", @lines;
        my ($out, $quoted, $next, %used) = ("", 0, 0);
        while ($text =~ /\G(\x27|\$\d+|[^\x27\$]+|\$)/gc) {
            my $t = $1;
            $quoted = !$quoted if $t eq "\x27";
            if (!$quoted && $t =~ /^\$(\d+)$/) {
                # With optional lines, numbered as the driver numbers what
                # it sends: in order.
                $used{$1} //= $optional ? $next++ : $1 - 1;
                $next = $used{$1} + 1 if $used{$1} >= $next;
                die "$file: no value for $t\n" if $used{$1} >= @values;
                $out .= $values[$used{$1}];
            } else {
                $out .= $t;
            }
        }
        die "$file: " . (@values - $next) . " values left over\n" if $next != @values;
        print $out;
    ' "$crate/sql/$name.sql" "$flags" "$@"
}

# plan TITLE NAME FLAGS VALUE...: the plan of one statement.
plan() {
    title=$1
    shift
    text=$(statement "$@")
    printf '\\echo %s: %s\n' "$1" "$title"
    printf 'BEGIN;\nEXPLAIN (ANALYZE, BUFFERS, COSTS OFF)\n%s;\nROLLBACK;\n\n' "$text"
}

script=$(mktemp)
trap 'rm -f "$script"' EXIT
ns="'explain'"
{
    echo '\set ON_ERROR_STOP 1'
    echo 'SET client_min_messages = warning;'
    echo '\set ns explain'
    echo "\\set n $n"
    cat "$crate"/migrations/*.sql "$crate/explain/fill.sql"

    plan "claim of 64 from the default queue" \
        claim/claim_queue "" "$ns" "'default'" 64 30000 "'w-2'"
    plan "limited claim of 64 (inside its transaction)" \
        limits/claim_queue "" "$ns" "'default'" 64 30000 "'w-2'"
    plan "heartbeat of three leases" \
        claim/renew_leases "" "$ns" 30000 "ARRAY['r00000020', 'r00000021', 'r00000022']" "ARRAY[1, 1, 1]::BIGINT[]"
    plan "finish, one UPDATE conditional on the fence" \
        finish/finish "" NULL FALSE NULL FALSE "'PENDING'" "$ns" "'r00000020'" 1
    plan "finish, a batch of completions" \
        finish/complete_batch "" "$ns" "ARRAY['r00000020', 'r00000021', 'r00000022']" "ARRAY[1, 1, 1]::BIGINT[]"
    plan "reap of up to 1,000 expired leases" \
        housekeeping/reap "" "$ns" 1000
    plan "trim, completed and cancelled past a 1-day retention" \
        housekeeping/trim "" "$ns" "ARRAY['COMPLETED', 'CANCELLED']" 86400000 NULL 1000
    plan "trim, the cutoff of a count of 1,000" \
        housekeeping/count_cutoff "" "$ns" "ARRAY['COMPLETED', 'CANCELLED']" 1000
    plan "wait_for_work, the earliest due time of the served queues that can be claimed" \
        wake/next_due "" "ARRAY['default', 'bulk']" "$ns" "$ns" "$ns"
    plan "queues, the figures of the queues with waiting tasks" \
        queues/figures "" "$ns" "$ns" "$ns"
    plan "due_before, the tier mover" \
        tier/due_before "" "$ns" "$ns" "$ns" 5000 1000 1000
    plan "list, a later page of COMPLETED" \
        query/list after_finished "$ns" "'COMPLETED'" 3000 3000 "'d00000001'" 101
    plan "list, a page of one task name" \
        query/list name "$ns" "'COMPLETED'" "'noop'" 101
    plan "counts" \
        query/counts "" "$ns"
} >"$script"
psql "$@" -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' -c 'DROP DATABASE IF EXISTS rex_explain' -c 'CREATE DATABASE rex_explain'
psql "$@" -d rex_explain -X -q -v ON_ERROR_STOP=1 -f "$script"
psql "$@" -q -c 'DROP DATABASE rex_explain'
