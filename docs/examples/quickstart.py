"""Kafka's quickstart with kproto: start a broker, create a topic, write events, read them
back, describe the topic. Run it: ``python docs/examples/quickstart.py``."""

from kproto import AdminClient, Consumer, ConsumerRecord, Producer
from kproto.admin import NewTopic
from minibroker import MiniBroker

# Step 1: start a broker. minibroker runs in this process, on a free port of 127.0.0.1;
# with a real cluster, use its bootstrap servers instead.
with MiniBroker() as broker:
    bootstrap = broker.bootstrap_servers

    # Step 2: create a topic to store your events.
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("quickstart-events", num_partitions=1)])

    # Step 3: write some events into the topic.
    with Producer(bootstrap_servers=bootstrap) as producer:
        for event in ["This is my first event", "This is my second event"]:
            producer.send("quickstart-events", event.encode())
        # Leaving the with-block flushes: both events are stored when it ends.

    # Step 4: read the events.
    with Consumer(bootstrap_servers=bootstrap, group_id="quickstart", auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["quickstart-events"])
        events: list[ConsumerRecord] = []
        while len(events) < 2:
            events += consumer.poll(1.0)
        for record in events:
            print(record.offset, record.value.decode())

    # Step 5: describe the topic, and see where the group stands.
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        topic = admin.describe_topics(["quickstart-events"])["quickstart-events"]
        print(f"{topic.name}: {len(topic.partitions)} partition(s), leader {topic.partitions[0].leader}")
        for tp, committed in admin.list_group_offsets("quickstart").items():
            print(f"group quickstart: {tp.topic}-{tp.partition} committed {committed.offset}")
