#!/bin/sh
# Query plans of the statements MySqlStorage runs, read from the very files
# the driver loads (executor-mysql/sql/**/*.sql), on a seeded copy of the
# schema (MariaDB; seed.sql uses the SEQUENCE engine):
#
#   executor-mysql/explain/run.sh -uroot -h127.0.0.1
#
# The arguments go to the `mysql` client. The script creates the database
# rex_explain, applies every migration and seed.sql, prints each statement's
# plan, and drops the database. For each statement it reads the file, leaves
# out the comments, keeps the lines marked `-- if NAME` for the names given
# (the others are left out, as the driver does), writes a marked group
# (`/*SLICE:..*/`, `/*UNION:..*/`) once and a `/*LITERALS:..*/` list as the
# file has it, and puts the given test values in place of the `?`
# placeholders, in order (a value may be a list, for a `/*SLICE:..*/?`; a
# group of several placeholders takes the values of one element).
# `ANALYZE` runs the statement and adds r_rows, the rows actually read;
# statements that change data run inside a transaction that is rolled back
# (the storage itself runs every statement autocommit).
set -eu
crate=$(cd "$(dirname "$0")/.." && pwd)

# statement NAME FLAGS VALUE...: the text of sql/NAME.sql with the test values.
statement() {
    name=$1 flags=$2
    shift 2
    perl -e '
        my ($file, $flags, @values) = @ARGV;
        my %on = map { $_ => 1 } split /,/, $flags;
        open my $fh, "<", $file or die "$file: $!\n";
        my @lines;
        while (my $line = <$fh>) {
            chomp $line;
            next if $line =~ /^\s*--/;
            if ($line =~ /^(.*?)\s+-- if (\w+)\s*$/) {
                next unless $on{$2};
                $line = $1;
            }
            push @lines, $line;
        }
        my $text = join "\n", @lines;
        $text =~ s{/\*(?:SLICE|UNION|LITERALS):\w+\*/}{}g;
        my ($out, $quoted) = ("", 0);
        for my $c (split //, $text) {
            $quoted = !$quoted if $c eq "\x27";
            if (!$quoted && $c eq "?") {
                die "$file: more placeholders than values\n" unless @values;
                $out .= shift @values;
            } else {
                $out .= $c;
            }
        }
        die "$file: " . scalar(@values) . " values left over\n" if @values;
        print $out;
    ' "$crate/sql/$name.sql" "$flags" "$@"
}

# plan TITLE NAME FLAGS VALUE...: the plan of one statement.
plan() {
    title=$1
    shift
    text=$(statement "$@")
    printf "SELECT '%s: %s' AS statement;\n" "$1" "$title"
    case $text in
    SELECT* | \(*) printf 'ANALYZE %s;\n\n' "$text" ;;
    *) printf 'BEGIN;\nANALYZE %s;\nROLLBACK;\n\n' "$text" ;;
    esac
}

ids="'w2', 'w4', 'w6', 'w8', 'w10', 'w12', 'w14', 'w16'"
script=$(mktemp)
trap 'rm -f "$script"' EXIT
{
    echo "DROP DATABASE IF EXISTS rex_explain; CREATE DATABASE rex_explain; USE rex_explain;"
    cat "$crate"/migrations/*.sql "$crate/explain/seed.sql"

    plan "claim 1/3, the candidates of the default queue, all ranks read with locks" \
        claim/select_candidates locked 0 "'app'" "'default'" "'app'" "'default'" 128
    plan "claim 1/3, the same over the ranks read without locks" \
        claim/select_candidates "" 0 "'app'" "'default'" "'app'" "'default'" 128
    plan "claim 1/3, a paused queue (bulk) gives no rows" \
        claim/select_candidates locked 1 "'app'" "'bulk'" "'app'" "'bulk'" 128
    plan "claim 1/3, the limited queues of the plan" \
        claim/select_limited_queues "" "'app'" "'default', 'bulk'"
    plan "claim 2/3, the UPDATE of 8 candidates, the first 4 still due, with a token" \
        claim/take_candidates ordered 30000 "'w-2'" 77 "'app'" "$ids" 4294967295 18446744073709551615 4
    plan "claim 3/3, the claimed rows read back by ids and token" \
        claim/read_claimed "" "'app'" "$ids" 77
    plan "limited claim, the candidates of one queue" \
        limits/select_candidates "" "'app'" "'default'" 65
    plan "limited claim, its RUNNING tasks counted on ix_lease" \
        limits/count_running "" "'app'" "'default'"
    plan "heartbeat 1/2, all leases of a worker in one UPDATE" \
        claim/renew_leases "" 30000 "'app'" "'r20', 'r21', 'r22', 'r22'" "'r20'" 1
    plan "heartbeat 2/2" \
        claim/read_leases "" "'app'" "'r20', 'r21', 'r22', 'r22'"
    plan "finish, one UPDATE conditional on the fence" \
        finish/finish "" 0 0 0 NULL 0 "'PENDING'" "'app'" "'r20'" 3 1
    plan "finish, a batch of completions" \
        finish/complete_batch "" "'app'" "'r20', 'r21', 'r22', 'r22'" "'r20'" 1
    plan "reap 1/3, expired leases no one is changing" \
        housekeeping/select_expired "" "'app'" 1000
    plan "reap 2/3" \
        housekeeping/reap "" "'lease expired (worker presumed dead)'" 78 "'app'" "'r1', 'r2', 'r3', 'r4'" 18446744073709551615
    plan "trim, completed and cancelled past a 1-day retention" \
        housekeeping/select_trimmable age "'app'" 86400000 1000
    plan "trim, completed and cancelled past a count of 1,000" \
        housekeeping/count_cutoff "" "'app'" "'COMPLETED'" 1001 1000
    plan "trim, the DELETE of the ids read" \
        housekeeping/delete_trimmed "" "'app'" "@now - 86400000" "'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'"
    plan "wait_for_work, the earliest due time of the served queues that can be claimed: a loose index scan" \
        wake/next_due "" "'app'" "'default', 'bulk'" "'app'" "'app'"
    plan "queues 1/3 (and due_before 1/2), the queue names, one dive each" \
        queues/first_queue "" "'app'"
    plan "queues 1/3, the next name" \
        queues/next_queue "" "'app'" "'bulk'"
    plan "queues 1/3, whether a queue has waiting tasks, one dive" \
        queues/top_rank "" "'bulk'" "'app'" "'bulk'"
    plan "queues 2/3, their figures over the waiting tasks only" \
        queues/figures "" "'app'" "'bulk', 'default'"
    plan "queues 3/3, the running tasks per queue on ix_lease" \
        queues/running "" "'app'"
    plan "due_before 2/2, the tier mover: ids sorted in the index, rows by primary key" \
        tier/due_before "" "'app'" "'bulk', 'default'" "@now - 599000" 1000 "'app'"
    plan "debounce, the task waiting under a key" \
        submit/waiting_under "" "'app'" "'user-7'"
    plan "list, a later page of COMPLETED" \
        query/list after_finished "'app'" "'COMPLETED'" "@now - 50000000" "@now - 50000000" "'c1'" 101
    plan "list, a page of one task name" \
        query/list name "'app'" "'COMPLETED'" "'noop'" 101
    plan "counts" \
        query/counts "" "'app'"

    echo "DROP DATABASE rex_explain;"
} >"$script"
mysql --table "$@" <"$script"
