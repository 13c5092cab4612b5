from colony.cli import main

if __name__ == "__main__":  # guard: multiprocessing "spawn" children re-import __main__
    main()
