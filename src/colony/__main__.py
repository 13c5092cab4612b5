from colony.cli import main

main()
