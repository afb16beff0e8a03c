def resumable_fit(model, x, y=None, backup=None, epochs=1, **kwargs):
    """`model.fit(x, y, epochs=epochs, **kwargs)` that resumes a killed run where its last backup stands.

    `backup` (an `AtomicBackupAndRestore` among `kwargs["callbacks"]`) restores the run's
    weights, optimizer and callbacks when the fit begins. A backup made at an epoch's end
    needs nothing more; one made part-way through an epoch (`every_steps`, `every_minutes`)
    needs the rest of that epoch's batches, in the order the uninterrupted run had them:
    this fit trains them first (`BertTask.fit`'s `initial_batch`: the order of an epoch is a
    function of `shuffle_seed` and the epoch alone), which ends with an epoch's backup, then
    fits the later epochs from it. The run ends with the weights of the run never killed,
    dropout's masks included (the backup holds their random state; tests/training/test_resumable_fit.py).

    Args:
        model: a `kbert.tasks.BertTask` (raw inputs, batched by kbert).
        x, y: the training inputs and labels, as `fit` takes them.
        backup: the `AtomicBackupAndRestore` among the callbacks.
        epochs: int. The run's epochs.
        **kwargs: `fit`'s other arguments; pass `shuffle_seed` so that every fit of the run
            draws the same orders.

    Returns: the `History` of the whole run (epochs before a resume come from the backup).
    """
    position = backup.resume_position()
    if position is not None and position[1] and position[0] < epochs:
        epoch, batch = position
        model.fit(x, y, epochs=epoch + 1, initial_epoch=epoch, initial_batch=batch, **kwargs)
    return model.fit(x, y, epochs=epochs, **kwargs)
