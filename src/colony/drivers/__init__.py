"""Client-side code that drives a colony through the :class:`colony.services.protocol.Colony`
interface: the query client and workload runner, the sift driver, and near-storage
orchestration (COSTA, NESCAFE, merge sort). Core packages hold only pure logic."""
