# Kafka's quickstart with the kproto command. Step 1, in another terminal, starts a broker:
#   kproto broker --port 9092 --data-dir /tmp/kproto-data
# (the test that runs this script starts one and sets KPROTO_BOOTSTRAP_SERVERS to it).
set -eu

# Step 2: create a topic, and look at it.
kproto topics create quickstart-events --partitions 1
kproto topics describe quickstart-events

# Step 3: write some events (one per line).
printf 'This is my first event\nThis is my second event\n' | kproto produce quickstart-events

# Step 4: read them, as a consumer group would.
kproto consume quickstart-events --from-beginning --group quickstart --max-messages 2

# Step 5: where does the group stand?
kproto groups describe quickstart
