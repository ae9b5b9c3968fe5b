"""What a job's Batsim profile says about its I/O, for schedulers.

A scheduler sees each job's profile (pybatsim: ``job.profile_dict``, and
``bs.profiles[workload]`` for the profiles a composed one names). These
functions walk a profile tree once, the same way the engine runs it.
"""


def _walk(profile, profiles, times=1):
    """Yield (leaf profile, how many times it runs)."""
    if profile["type"] == "composed":
        repeat = profile.get("repeat", 1)
        for name in profile["seq"]:
            yield from _walk(profiles[name], profiles, times * repeat)
    else:
        yield profile, times


def storage_labels(profile, profiles):
    """The storage labels a profile reaches, in first-use order."""
    labels = []
    for leaf, _ in _walk(profile, profiles):
        if leaf["type"] == "parallel_homogeneous_pfs":
            found = [leaf.get("storage", leaf.get("host", "pfs"))]
        elif leaf["type"] == "data_staging":
            found = [leaf["from"], leaf["to"]]
        else:
            found = []
        labels += [label for label in found if label not in labels]
    return labels


def bytes_moved(profile, profiles, nb_hosts):
    """(bytes read, bytes written) from and to storage by a job on nb_hosts hosts."""
    read = write = 0.0
    for leaf, times in _walk(profile, profiles):
        if leaf["type"] == "parallel_homogeneous_pfs":
            read += times * nb_hosts * leaf.get("bytes_to_read", 0)
            write += times * nb_hosts * leaf.get("bytes_to_write", 0)
        elif leaf["type"] == "data_staging":
            read += times * leaf["nb_bytes"]
            write += times * leaf["nb_bytes"]
    return read, write


def delay_seconds(profile, profiles):
    """Seconds the profile's ``delay`` phases last, each as often as it runs:
    the part of a job's run time that the platform does not decide."""
    return sum(times * float(leaf["delay"]) for leaf, times in _walk(profile, profiles) if leaf["type"] == "delay")


def storage_mapping_by_name(labels, storage_resources):
    """Map the labels that name a storage host to its resource id.

    ``storage_resources``: pybatsim's ``bs.storage_resources`` ({id: {"name"...}}).
    Labels that name no host are left out: with a single storage host Batsim
    uses it for them when the mapping is empty.
    """
    ids = {resource["name"]: resource_id for resource_id, resource in storage_resources.items()}
    return {label: ids[label] for label in labels if label in ids}


def job_storage_mapping(job, bs):
    """EXECUTE_JOB's storage_mapping for a pybatsim job: each storage label of
    its profile that names a storage host goes to that host."""
    profiles = bs.profiles[job.workload]
    return storage_mapping_by_name(storage_labels(profiles[job.profile], profiles), bs.storage_resources)
